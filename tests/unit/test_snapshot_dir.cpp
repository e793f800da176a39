// Directory snapshots: capture, content addressing, extraction (with owners,
// modes, symlinks, hard links, xattrs), hostile blobs, catalog, retention.
#include <archive.h>
#include <archive_entry.h>
#include <doctest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "snapshot/catalog.h"
#include "snapshot/dir_snapshot.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {
struct Tmp {
  std::string base;
  Tmp() {
    char t[] = "/tmp/sbx-snapdir.XXXXXX";
    base = ::mkdtemp(t);
  }
  ~Tmp() { stdfs::remove_all(base); }
};
std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
void make_project(const std::string& d) {
  stdfs::create_directories(d + "/src/pkg");
  std::ofstream(d + "/src/pkg/mod.py") << "x = 1\n";
  std::ofstream(d + "/README") << "hello\n";
  REQUIRE(::chown((d + "/src/pkg/mod.py").c_str(), 1000, 1000) == 0);
  REQUIRE(::chmod((d + "/src/pkg/mod.py").c_str(), 0600) == 0);
  REQUIRE(::setxattr((d + "/README").c_str(), "user.origin", "agent", 5, 0) == 0);
  stdfs::create_symlink("src/pkg/mod.py", d + "/link");
  stdfs::create_hard_link(d + "/README", d + "/README.hard");
}
}  // namespace

TEST_CASE("directory snapshots round-trip with owners, modes, links and xattrs") {
  Tmp t;
  std::string root = t.base + "/root", src = t.base + "/project";
  make_project(src);
  snapshot::DirSnapshotRequest req;
  req.dir = src;
  req.name = "proj";
  req.parent = "sandbox1";
  auto rec = snapshot::snapshot_dir(root, req);
  CHECK(rec.kind == "dir");
  CHECK(rec.id.size() == 64);
  CHECK(stdfs::file_size(root + "/snapshots/dirs/" + rec.id + ".tar.zst") == rec.size);

  // Same content under another name: one blob.
  req.name = "proj2";
  auto rec2 = snapshot::snapshot_dir(root, req);
  CHECK(rec2.id == rec.id);
  CHECK(snapshot::read_catalog(root).size() == 2);

  std::string out = t.base + "/out";
  snapshot::extract_dir_snapshot(root, "proj", out);
  CHECK(slurp(out + "/src/pkg/mod.py") == "x = 1\n");
  struct stat st;
  REQUIRE(::stat((out + "/src/pkg/mod.py").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(stdfs::read_symlink(out + "/link") == "src/pkg/mod.py");
  char v[16] = {};
  CHECK(::getxattr((out + "/README").c_str(), "user.origin", v, sizeof v) == 5);
  CHECK(std::string(v) == "agent");
  struct stat a, b;
  REQUIRE(::stat((out + "/README").c_str(), &a) == 0);
  REQUIRE(::stat((out + "/README.hard").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK_FALSE(snapshot::find_record(root, "proj").last_used.empty());

  // The mount helper gives a private copy: writing to it leaves the snapshot as it was.
  auto m = snapshot::mount_snapshot(root, "proj:/workspace", t.base + "/copy");
  CHECK(m.destination == "/workspace");
  CHECK(m.type == "bind");
  std::ofstream(m.source + "/README") << "changed\n";
  snapshot::extract_dir_snapshot(root, "proj", t.base + "/again");
  CHECK(slurp(t.base + "/again/README") == "hello\n");
  CHECK_THROWS_WITH_AS(snapshot::mount_snapshot(root, "proj", t.base + "/x"), doctest::Contains("NAME:/"), Error);

  // rm: the blob stays while another name uses it, goes with the last one.
  snapshot::remove_snapshot(root, t.base + "/run", "proj");
  CHECK(stdfs::exists(root + "/snapshots/dirs/" + rec.id + ".tar.zst"));
  snapshot::remove_snapshot(root, t.base + "/run", "proj2");
  CHECK_FALSE(stdfs::exists(root + "/snapshots/dirs/" + rec.id + ".tar.zst"));
  CHECK_THROWS_AS(snapshot::remove_snapshot(root, t.base + "/run", "proj"), Error);
  try {
    snapshot::extract_dir_snapshot(root, "nope", t.base + "/y");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 125);  // as documented: sbx failed
    CHECK(e.kind() == ErrorKind::SnapshotNotFound);
    CHECK(std::string(e.what()).find("sbx snapshots") != std::string::npos);
  }
}

TEST_CASE("extracting a hostile directory snapshot never writes outside the target") {
  Tmp t;
  std::string root = t.base + "/root";
  stdfs::create_directories(root + "/snapshots/dirs");
  auto make_blob = [&](const std::string& id, auto&& add) {
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_zstd(a);
    archive_write_open_filename(a, (root + "/snapshots/dirs/" + id + ".tar.zst").c_str());
    add(a);
    archive_write_close(a);
    archive_write_free(a);
    snapshot::SnapshotRecord r;
    r.name = id.substr(0, 4);
    r.kind = "dir";
    r.id = id;
    snapshot::put_record(root, r);
  };
  auto entry = [](struct archive* a, const char* path, mode_t type, const char* link = nullptr) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, 0644);
    if (link) archive_entry_set_symlink(e, link);
    archive_entry_set_size(e, type == AE_IFREG ? 3 : 0);
    archive_write_header(a, e);
    if (type == AE_IFREG) archive_write_data(a, "bad", 3);
    archive_entry_free(e);
  };
  std::string outside = t.base + "/escaped";
  make_blob(std::string(64, 'a'), [&](struct archive* a) { entry(a, "../escaped", AE_IFREG); });
  CHECK_THROWS_WITH_AS(snapshot::extract_dir_snapshot(root, "aaaa", t.base + "/o1"), doctest::Contains("refused"), Error);
  make_blob(std::string(64, 'b'), [&](struct archive* a) {
    entry(a, "esc", AE_IFLNK, t.base.c_str());
    entry(a, "esc/escaped", AE_IFREG);
  });
  // Refused, or the symlink replaced by a real dir: either way nothing lands outside.
  try {
    snapshot::extract_dir_snapshot(root, "bbbb", t.base + "/o2");
    CHECK(stdfs::is_directory(stdfs::symlink_status(t.base + "/o2/esc")));
  } catch (const Error&) {
  }
  CHECK_FALSE(stdfs::exists(outside));
  make_blob(std::string(64, 'c'), [&](struct archive* a) { entry(a, (t.base + "/escaped").c_str(), AE_IFREG); });
  CHECK_THROWS_AS(snapshot::extract_dir_snapshot(root, "cccc", t.base + "/o3"), Error);
  CHECK_FALSE(stdfs::exists(outside));
}

TEST_CASE("snapshot retention removes what was not used for longer than the limit") {
  Tmp t;
  std::string root = t.base + "/root", src = t.base + "/p";
  stdfs::create_directories(src);
  std::ofstream(src + "/f") << "1";
  snapshot::DirSnapshotRequest req;
  req.dir = src;
  req.name = "old";
  auto old = snapshot::snapshot_dir(root, req);
  // Age it by rewriting its record.
  old.created = "2020-01-01T00:00:00Z";
  snapshot::put_record(root, old);
  std::ofstream(src + "/f") << "2";
  req.name = "new";
  snapshot::snapshot_dir(root, req);
  auto removed = snapshot::gc(root, t.base + "/run", 3600);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].name == "old");
  auto left = snapshot::list_all(root);
  REQUIRE(left.size() == 1);
  CHECK(left[0].name == "new");
  CHECK_FALSE(stdfs::exists(root + "/snapshots/dirs/" + old.id + ".tar.zst"));
}
