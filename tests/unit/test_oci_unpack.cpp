// Layer unpacking: every entry type, whiteouts, and each hostile case.
#include <doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/error.h"
#include "oci/unpack.h"
#include "oci_test_util.h"

using namespace sbx;
using namespace sbx::test;
using oci::unpack_layer;

namespace {

// Writes `bytes` as a blob file in `t`, unpacks it into t/root; returns the result.
oci::UnpackResult unpack(TempDir& t, const std::string& bytes, const oci::UnpackLimits& lim = {}) {
  fs::write_file_atomic(t / "blob", bytes);
  fs::mkdir_p(t / "root");
  return unpack_layer(t / "blob", t / "root", {}, {}, lim);
}

std::string xattr(const std::string& path, const char* name) {
  char buf[256];
  ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? std::string("<none>") : std::string(buf, static_cast<size_t>(n));
}

// Unpacking must throw with `needle` in the message and create nothing in
// `outside` (a sibling dir of the layer).
void expect_hostile(const std::vector<TarEntry>& es, const std::string& needle) {
  TempDir t;
  fs::mkdir_p(t / "outside");
  CAPTURE(needle);
  std::string msg;
  try {
    unpack(t, make_tar(es));
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find(needle) != std::string::npos);
  CHECK_FALSE(fs::exists(t / "outside/evil"));
  CHECK_FALSE(fs::exists(t / "evil"));
  CHECK_FALSE(fs::exists("/tmp/evil-sbx-unit"));
}

}  // namespace

TEST_CASE("unpack: files, dirs, links, devices, modes, owners, mtimes, xattrs") {
  TempDir t;
  std::string tar = make_tar({
      {.path = "/", .type = AE_IFDIR, .perm = 0755},
      {.path = "./bin/", .type = AE_IFDIR, .perm = 0755, .mtime = 1600000000},
      {.path = "bin/tool", .perm = 04755, .data = "#!/bin/sh\n", .uid = 1000, .gid = 1001,
       .xattrs = {{"user.note", "hi"}, {"trusted.overlay.opaque", "y"}}},
      {.path = "bin/tool2", .hardlink = "bin/tool"},
      {.path = "bin/sh", .type = AE_IFLNK, .perm = 0777, .symlink = "tool"},
      {.path = "etc/localtime", .type = AE_IFLNK, .perm = 0777, .symlink = "/usr/share/zoneinfo/UTC"},
      {.path = "dev/null", .type = AE_IFCHR, .perm = 0666, .rmajor = 1, .rminor = 3},
      {.path = "dev/loop0", .type = AE_IFBLK, .perm = 0660, .rmajor = 7, .rminor = 0},
      {.path = "run/fifo", .type = AE_IFIFO, .perm = 0600},
      {.path = "tmp", .type = AE_IFDIR, .perm = 01777},
      {.path = "deep/a/b/c/file", .data = "x"},
  });
  auto r = unpack(t, tar);
  CHECK(r.diff_id_hex == oci::sha256_hex(tar));
  CHECK(r.entries == 11);
  std::string root = t / "root";
  struct stat st;
  REQUIRE(::lstat((root + "/bin/tool").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 04755);
  CHECK(st.st_uid == 1000);
  CHECK(st.st_gid == 1001);
  CHECK(st.st_nlink == 2);
  CHECK(st.st_mtime == 1700000000);
  CHECK(fs::read_file(root + "/bin/tool2") == "#!/bin/sh\n");
  CHECK(xattr(root + "/bin/tool", "user.note") == "hi");
  CHECK(xattr(root + "/bin/tool", "trusted.overlay.opaque") == "<none>");  // never from an image
  REQUIRE(::lstat((root + "/bin").c_str(), &st) == 0);
  CHECK(st.st_mtime == 1600000000);  // set after its children were created
  REQUIRE(::lstat((root + "/bin/sh").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  char buf[64];
  CHECK(std::string(buf, static_cast<size_t>(::readlink((root + "/etc/localtime").c_str(), buf, sizeof buf))) ==
        "/usr/share/zoneinfo/UTC");
  REQUIRE(::lstat((root + "/dev/null").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(major(st.st_rdev) == 1);
  CHECK(minor(st.st_rdev) == 3);
  REQUIRE(::lstat((root + "/dev/loop0").c_str(), &st) == 0);
  CHECK(S_ISBLK(st.st_mode));
  REQUIRE(::lstat((root + "/run/fifo").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  REQUIRE(::lstat((root + "/tmp").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 01777);
  CHECK(fs::read_file(root + "/deep/a/b/c/file") == "x");
}

TEST_CASE("unpack: whiteouts become overlay whiteouts, .wh..wh..opq an opaque dir") {
  TempDir t;
  unpack(t, make_tar({
                {.path = "etc", .type = AE_IFDIR, .perm = 0755},
                {.path = "etc/.wh.passwd"},
                {.path = "opt/.wh..wh..opq"},
                {.path = "opt/new", .data = "n"},
                {.path = ".wh.toplevel"},
                {.path = "x/.wh..wh.plnk", .data = ""},  // aufs metadata: ignored
            }));
  struct stat st;
  REQUIRE(::lstat((t / "root/etc/passwd").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == makedev(0, 0));
  REQUIRE(::lstat((t / "root/toplevel").c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK_FALSE(fs::exists(t / "root/etc/.wh.passwd"));
  CHECK(xattr(t / "root/opt", "trusted.overlay.opaque") == "y");
  CHECK_FALSE(fs::exists(t / "root/opt/.wh..wh..opq"));
  CHECK(fs::read_file(t / "root/opt/new") == "n");
  CHECK_FALSE(fs::exists(t / "root/x/.wh..wh.plnk"));
}

TEST_CASE("unpack: later entries replace earlier ones") {
  TempDir t;
  unpack(t, make_tar({
                {.path = "a", .data = "file"},
                {.path = "a", .type = AE_IFDIR, .perm = 0700},
                {.path = "a/b", .data = "in dir"},
                {.path = "c", .type = AE_IFDIR},
                {.path = "c/d", .data = "gone"},
                {.path = "c", .type = AE_IFLNK, .symlink = "a"},
            }));
  CHECK(fs::read_file(t / "root/a/b") == "in dir");
  struct stat st;
  REQUIRE(::lstat((t / "root/c").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("unpack: gzip, zstd and plain layers give the same diff id") {
  std::vector<TarEntry> es = {{.path = "f", .data = std::string(100000, 'z')}};
  std::string plain = make_tar(es);
  for (Compress c : {Compress::None, Compress::Gzip, Compress::Zstd}) {
    TempDir t;
    TempDir l;
    auto b = make_oci_layout(l.path, {plain}, c);
    fs::mkdir_p(t / "root");
    auto r = unpack_layer(l.path + "/blobs/sha256/" + b.layer_hex[0], t / "root");
    CHECK(r.diff_id_hex == oci::sha256_hex(plain));
    CHECK(r.bytes == 100000);
    CHECK(fs::read_file(t / "root/f") == std::string(100000, 'z'));
  }
}

TEST_CASE("unpack: hostile paths and links are refused and nothing escapes") {
  expect_hostile({{.path = "../evil", .data = "x"}}, "'..'");
  expect_hostile({{.path = "a/../../evil", .data = "x"}}, "'..'");
  expect_hostile({{.path = "/tmp/evil-sbx-unit", .data = "x"}}, "absolute path");
  // A symlink that climbs above the root is data (see the next case), but
  // nothing is ever written through it.
  expect_hostile({{.path = "evil", .type = AE_IFLNK, .symlink = "../outside"}, {.path = "evil/f", .data = "x"}},
                 "leads outside the layer");
  expect_hostile({{.path = "a/b/evil", .type = AE_IFLNK, .symlink = "../../../outside"},
                  {.path = "a/b/evil/f", .data = "x"}},
                 "leads outside the layer");
  expect_hostile({{.path = "evil", .hardlink = "../outside/f"}}, "'..'");
  expect_hostile({{.path = "evil", .hardlink = "/etc/passwd"}}, "absolute path");
  expect_hostile({{.path = "evil", .hardlink = "not-here"}}, "not in this layer");
  // A symlinked parent: lnk -> /tmp is a fine symlink (it points into the
  // sandbox's own /tmp at run time) but must not be followed while unpacking.
  expect_hostile({{.path = "lnk", .type = AE_IFLNK, .symlink = "/tmp"},
                  {.path = "lnk/evil-sbx-unit", .data = "x"}},
                 "leads outside the layer");
  expect_hostile({{.path = "lnk", .type = AE_IFLNK, .symlink = "/tmp"},
                  {.path = "lnk/evil-sbx-unit", .hardlink = "lnk"}},
                 "leads outside the layer");
  // Hard link through a symlinked parent to a host file.
  expect_hostile({{.path = "e", .type = AE_IFLNK, .symlink = "/etc"}, {.path = "evil", .hardlink = "e/passwd"}},
                 "leads outside the layer");
  // An opaque marker under a symlinked dir.
  expect_hostile({{.path = "lnk", .type = AE_IFLNK, .symlink = "/tmp"}, {.path = "lnk/.wh..wh..opq"}},
                 "leads outside the layer");
}

TEST_CASE("unpack: a relative symlink above the root is kept as data") {
  TempDir t;
  unpack(t, make_tar({{.path = "bad", .type = AE_IFLNK, .symlink = "../x"},
                      {.path = "a/b/deep", .type = AE_IFLNK, .symlink = "../../../../etc/passwd"}}));
  char buf[64] = {};
  CHECK(::readlink((t / "root/bad").c_str(), buf, sizeof buf - 1) == 4);
  CHECK(std::string(buf) == "../x");
  struct stat st {};
  CHECK(::lstat((t / "root/a/b/deep").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("unpack: a symlink that stays inside the layer may be a parent") {
  TempDir t;
  unpack(t, make_tar({{.path = "usr/lib", .type = AE_IFDIR},
                      {.path = "lib", .type = AE_IFLNK, .symlink = "usr/lib"},
                      {.path = "lib/x", .data = "ok"}}));
  CHECK(fs::read_file(t / "root/usr/lib/x") == "ok");
}

TEST_CASE("unpack: truncated, corrupt and oversized layers fail") {
  std::string tar = make_tar({{.path = "big", .data = std::string(20000, 'b')}, {.path = "after", .data = "a"}});
  {
    TempDir t;
    CHECK_THROWS_WITH_AS(unpack(t, tar.substr(0, 3000)), doctest::Contains("runcated"), Error);
  }
  {
    TempDir t, l;
    auto b = make_oci_layout(l.path, {tar}, Compress::Gzip);
    std::string gz = fs::read_file(l.path + "/blobs/sha256/" + b.layer_hex[0]);
    CHECK_THROWS_AS(unpack(t, gz.substr(0, gz.size() / 2)), Error);
  }
  {
    TempDir t;
    CHECK_THROWS_AS(unpack(t, std::string(4096, '\x07')), Error);  // not a tar
  }
  {
    TempDir t;
    oci::UnpackLimits lim;
    lim.max_bytes = 1000;
    CHECK_THROWS_WITH_AS(unpack(t, tar, lim), doctest::Contains("limit"), Error);
  }
  {
    TempDir t;
    oci::UnpackLimits lim;
    lim.max_entries = 1;
    CHECK_THROWS_WITH_AS(unpack(t, tar, lim), doctest::Contains("entries"), Error);
  }
}

TEST_CASE("unpack: implied parent dirs copy owner and mode from the layers below") {
  TempDir t;
  fs::mkdir_p(t / "lower/tmp");
  ::chmod((t / "lower/tmp").c_str(), 01777);
  REQUIRE(::chown((t / "lower/tmp").c_str(), 5, 6) == 0);
  fs::write_file_atomic(t / "blob", make_tar({{.path = "tmp/x", .data = "x"}, {.path = "var/y", .data = "y"}}));
  fs::mkdir_p(t / "root");
  unpack_layer(t / "blob", t / "root", {}, {t / "lower"});
  struct stat st;
  REQUIRE(::stat((t / "root/tmp").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 01777);
  CHECK(st.st_uid == 5);
  REQUIRE(::stat((t / "root/var").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);
}
