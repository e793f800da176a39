// upper_to_layer on a real overlay mount: files are deleted, replaced and
// created through the merged dir, then the upper dir is turned into a layer
// tar and read back with libarchive.
#include <archive.h>
#include <archive_entry.h>
#include <doctest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <vector>

#include "common/error.h"
#include "snapshot/upper_to_layer.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

struct TarEntry {
  mode_t type = 0;
  mode_t perm = 0;
  int64_t uid = 0, gid = 0;
  std::string data, symlink, hardlink;
  std::map<std::string, std::string> xattrs;
};

/// Reads a tar into path → entry, keeping the order of paths in `order`.
std::map<std::string, TarEntry> read_tar(const std::string& path, std::vector<std::string>* order = nullptr) {
  std::map<std::string, TarEntry> out;
  struct archive* a = archive_read_new();
  archive_read_support_format_all(a);
  archive_read_support_filter_all(a);
  REQUIRE(archive_read_open_filename(a, path.c_str(), 65536) == ARCHIVE_OK);
  struct archive_entry* e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    TarEntry t;
    t.type = archive_entry_filetype(e);
    t.perm = archive_entry_perm(e);
    t.uid = archive_entry_uid(e);
    t.gid = archive_entry_gid(e);
    if (archive_entry_symlink(e)) t.symlink = archive_entry_symlink(e);
    if (archive_entry_hardlink(e)) t.hardlink = archive_entry_hardlink(e);
    const char* name;
    const void* v;
    size_t len;
    archive_entry_xattr_reset(e);
    while (archive_entry_xattr_next(e, &name, &v, &len) == ARCHIVE_OK)
      t.xattrs[name] = std::string(static_cast<const char*>(v), len);
    char buf[4096];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) t.data.append(buf, static_cast<size_t>(n));
    std::string p = archive_entry_pathname(e);
    if (order) order->push_back(p);
    out[p] = t;
  }
  archive_read_free(a);
  return out;
}

/// A real overlay: lower (an "image layer"), upper, work, merged. Unmounted
/// and removed on destruction.
struct Overlay {
  std::string base, lower, upper, work, merged;
  bool mounted = false;
  Overlay() {
    char tmpl[] = "/tmp/sbx-snaptest.XXXXXX";
    base = ::mkdtemp(tmpl);
    lower = base + "/lower";
    upper = base + "/upper";
    work = base + "/work";
    merged = base + "/merged";
    for (auto& d : {lower, upper, work, merged}) stdfs::create_directories(d);
    stdfs::create_directories(lower + "/etc/conf.d");
    stdfs::create_directories(lower + "/var/cache/old");
    put(lower + "/etc/passwd", "root:x:0:0\n");
    put(lower + "/etc/hostname", "lower\n");
    put(lower + "/etc/conf.d/a", "a\n");
    put(lower + "/var/cache/old/blob", "old\n");
    put(lower + "/keep", "keep\n");
  }
  void mount() {
    std::string opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work;
    if (::mount("overlay", merged.c_str(), "overlay", 0, opts.c_str()) < 0) throw_errno("mount test overlay");
    mounted = true;
  }
  void umount() {
    if (mounted) ::umount2(merged.c_str(), MNT_DETACH);
    mounted = false;
  }
  ~Overlay() {
    umount();
    stdfs::remove_all(base);
  }
};

}  // namespace

TEST_CASE("upper_to_layer turns overlay whiteouts and opaque dirs into OCI entries") {
  Overlay o;
  o.mount();
  const std::string m = o.merged;
  // Deletions (whiteouts), a replaced directory (opaque), new files with
  // owners, modes, xattrs, a symlink and a hard link.
  stdfs::remove(m + "/etc/hostname");
  stdfs::remove_all(m + "/var/cache");
  stdfs::create_directories(m + "/var/cache");
  put(m + "/var/cache/new", "new\n");
  put(m + "/etc/passwd", "root:x:0:0\nagent:x:1000:1000\n");
  stdfs::create_directories(m + "/home/agent/work");
  put(m + "/home/agent/work/main.py", "print('hi')\n");
  REQUIRE(::chown((m + "/home/agent/work/main.py").c_str(), 1000, 1001) == 0);
  REQUIRE(::chmod((m + "/home/agent/work/main.py").c_str(), 04751) == 0);
  REQUIRE(::setxattr((m + "/home/agent/work/main.py").c_str(), "user.note", "v1", 2, 0) == 0);
  stdfs::create_symlink("main.py", m + "/home/agent/work/link");
  stdfs::create_hard_link(m + "/home/agent/work/main.py", m + "/home/agent/work/hard");
  o.umount();

  std::string tar1 = o.base + "/l1.tar", tar2 = o.base + "/l2.tar";
  auto r = snapshot::upper_to_layer(o.upper, tar1);
  CHECK(r.size == stdfs::file_size(tar1));
  CHECK(r.digest_hex.size() == 64);
  CHECK(r.whiteouts == 2);  // etc/.wh.hostname, var/cache/.wh..wh..opq

  std::vector<std::string> order;
  auto t = read_tar(tar1, &order);
  REQUIRE(t.count("etc/.wh.hostname"));
  CHECK(t["etc/.wh.hostname"].type == AE_IFREG);
  CHECK(t["etc/.wh.hostname"].data.empty());
  CHECK_FALSE(t.count("etc/hostname"));
  REQUIRE(t.count("var/cache/.wh..wh..opq"));
  CHECK(t.count("var/cache/new"));
  CHECK_FALSE(t.count("var/cache/old/blob"));
  CHECK(t["etc/passwd"].data == "root:x:0:0\nagent:x:1000:1000\n");
  CHECK_FALSE(t.count("keep"));  // untouched lower files are not in the diff
  auto& py = t["home/agent/work/main.py"];
  CHECK(py.uid == 1000);
  CHECK(py.gid == 1001);
  CHECK(py.perm == 04751);
  CHECK(py.xattrs["user.note"] == "v1");
  CHECK(t["home/agent/work/link"].symlink == "main.py");
  // The second name of the inode is a hard link to the first (sorted) one.
  CHECK(t["home/agent/work/hard"].hardlink.empty());
  CHECK(t["home/agent/work/main.py"].hardlink == "home/agent/work/hard");
  for (auto& [p, e] : t)
    for (auto& [k, v] : e.xattrs) CHECK_MESSAGE(k.rfind("trusted.overlay.", 0) != 0, p << " kept " << k);
  // The opaque marker follows its directory; entries are sorted depth-first.
  auto pos = [&](const std::string& p) { return std::find(order.begin(), order.end(), p) - order.begin(); };
  CHECK(pos("var/cache/") + 1 == pos("var/cache/.wh..wh..opq"));
  CHECK(pos("etc/") < pos("etc/.wh.hostname"));
  CHECK(pos("home/") < pos("var/"));

  // Deterministic: the same upper dir gives the same bytes.
  auto r2 = snapshot::upper_to_layer(o.upper, tar2);
  CHECK(r2.digest_hex == r.digest_hex);
}

TEST_CASE("upper_to_layer errors are clear") {
  CHECK_THROWS_WITH_AS(snapshot::upper_to_layer("/nonexistent/upper", "/tmp/x.tar"), doctest::Contains("/nonexistent/upper"), Error);
  Overlay o;
  CHECK_THROWS_WITH_AS(snapshot::upper_to_layer(o.upper, "/nonexistent/dir/out.tar"), doctest::Contains("/nonexistent/dir/out.tar"), Error);
  // redirect_dir would make a renamed directory look empty in a layer: refused.
  stdfs::create_directories(o.upper + "/moved");
  REQUIRE(::setxattr((o.upper + "/moved").c_str(), "trusted.overlay.redirect", "/orig", 5, 0) == 0);
  CHECK_THROWS_WITH_AS(snapshot::upper_to_layer(o.upper, o.base + "/x.tar"), doctest::Contains("redirect_dir"), Error);
}

TEST_CASE("upper_to_layer of a user-namespace sandbox: owners mapped back, user.overlay.* markers read") {
  // An upper dir as an overlay mounted in a user namespace (option userxattr)
  // leaves it: owners are the sandbox's host ids (here from 2^31), opaque dirs
  // carry user.overlay.opaque, deletions are 0/0 character devices.
  char tmpl[] = "/tmp/sbx-snaptest-userns.XXXXXX";
  const std::string base = ::mkdtemp(tmpl);
  const std::string up = base + "/upper";
  const uint32_t host = 1u << 31;
  stdfs::create_directories(up + "/home/agent");
  stdfs::create_directories(up + "/var/cache");
  put(up + "/root.txt", "r\n");
  put(up + "/home/agent/a.txt", "a\n");
  put(up + "/stranger", "s\n");
  REQUIRE(::chown((up + "/root.txt").c_str(), host, host) == 0);
  REQUIRE(::chown((up + "/home/agent").c_str(), host + 1000, host + 1000) == 0);
  REQUIRE(::chown((up + "/home/agent/a.txt").c_str(), host + 1000, host + 1001) == 0);
  REQUIRE(::chown((up + "/stranger").c_str(), 5, 5) == 0);  // no id in the sandbox's map
  REQUIRE(::setxattr((up + "/var/cache").c_str(), "user.overlay.opaque", "y", 1, 0) == 0);
  REQUIRE(::mknod((up + "/gone").c_str(), S_IFCHR | 0000, 0) == 0);
  REQUIRE(::chown((up + "/gone").c_str(), host, host) == 0);

  const std::vector<IdMapping> map = {{0, host, 65536}};
  auto r = snapshot::upper_to_layer(up, base + "/l.tar", map, map);
  CHECK(r.whiteouts == 2);  // .wh.gone, var/cache/.wh..wh..opq
  auto t = read_tar(base + "/l.tar");
  CHECK(t["root.txt"].uid == 0);
  CHECK(t["root.txt"].gid == 0);
  CHECK(t["home/agent/"].uid == 1000);
  CHECK(t["home/agent/a.txt"].uid == 1000);
  CHECK(t["home/agent/a.txt"].gid == 1001);
  CHECK(t["stranger"].uid == 65534);  // what the sandbox saw: the overflow id
  REQUIRE(t.count(".wh.gone"));
  CHECK(t[".wh.gone"].uid == 0);
  REQUIRE(t.count("var/cache/.wh..wh..opq"));
  CHECK(t["var/cache/"].xattrs.count("user.overlay.opaque") == 0);

  // Without maps the owners are written as they are on disk.
  snapshot::upper_to_layer(up, base + "/raw.tar");
  auto raw = read_tar(base + "/raw.tar");
  CHECK(raw["root.txt"].uid == host);
  CHECK(raw["stranger"].uid == 5);
  stdfs::remove_all(base);
}
