// Filesystem snapshot end to end at the library level: the real busybox test
// image imported into a temp store, a real overlay on its layers, changes made
// through it, the upper dir committed as a new image, and the new image's
// layers mounted again to see the changes (deletions included).
#include <doctest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "oci/store.h"
#include "snapshot/fs_snapshot.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {

std::string images_dir() {
  const char* src = std::getenv("SBX_TEST_SRC");
  std::string d = std::string(src ? src : ".") + "/tests/images/out";
  return stdfs::exists(d + "/busybox-oci/index.json") ? d : "";
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string lowerdir(const std::vector<std::string>& layers) {
  std::string s;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) s += (s.empty() ? "" : ":") + *it;
  return s;
}

struct TempStore {
  std::string base;
  std::vector<std::string> mounts;
  TempStore() {
    char tmpl[] = "/tmp/sbx-snapcommit.XXXXXX";
    base = ::mkdtemp(tmpl);
  }
  void mount_overlay(const std::string& target, const std::string& opts, unsigned long flags = 0) {
    stdfs::create_directories(target);
    if (::mount("overlay", target.c_str(), "overlay", flags, opts.c_str()) < 0) throw_errno("mount overlay on " + target);
    mounts.push_back(target);
  }
  void umount_all() {
    for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    mounts.clear();
  }
  ~TempStore() {
    umount_all();
    stdfs::remove_all(base);
  }
};

}  // namespace

TEST_CASE("snapshot_upper commits a sandbox's upper dir as a new image on its parent's layers") {
  std::string imgs = images_dir();
  if (imgs.empty()) {
    MESSAGE("skipped: test images not built (tests/images/build.sh)");
    return;
  }
  TempStore t;
  oci::Store store(t.base + "/root");
  oci::ImageRecord parent = store.import(imgs + "/busybox-oci", {"busybox:latest", {}, {}});
  auto lowers = store.layer_dirs(parent);
  REQUIRE(stdfs::exists(lowers.back() + "/.."));

  // A "sandbox": overlay with the image layers below and an upper dir on disk.
  std::string up = t.base + "/sb/upper", work = t.base + "/sb/work", merged = t.base + "/sb/merged";
  stdfs::create_directories(up);
  stdfs::create_directories(work);
  t.mount_overlay(merged, "lowerdir=" + lowerdir(lowers) + ",upperdir=" + up + ",workdir=" + work);
  REQUIRE(stdfs::exists(merged + "/bin/busybox"));
  REQUIRE(stdfs::exists(merged + "/etc/passwd"));
  stdfs::create_directories(merged + "/root/work");
  std::ofstream(merged + "/root/work/result.txt") << "42\n";
  stdfs::remove(merged + "/etc/passwd");
  t.umount_all();

  snapshot::FsSnapshotRequest req;
  req.upper_dir = up;
  req.parent_image = "busybox";
  req.commit.name = "snaptest:v1";
  req.commit.created_by = "sbx snapshot test";
  auto res = snapshot::snapshot_upper(store, req);
  CHECK(res.layer.whiteouts == 1);
  CHECK(res.image.names == std::vector<std::string>{"snaptest:v1"});
  REQUIRE(res.image.diff_ids.size() == parent.diff_ids.size() + 1);
  CHECK(res.image.diff_ids.back() == "sha256:" + res.layer.digest_hex);
  // Every lower layer is shared with the parent (same chain ids, same dirs).
  for (size_t i = 0; i < parent.chain_ids.size(); ++i) CHECK(res.image.chain_ids[i] == parent.chain_ids[i]);
  CHECK(res.image.config.env == parent.config.env);
  CHECK(store.resolve("snaptest:v1").id == res.image.id);
  CHECK(store.list().size() == 2);

  // The config records the new layer and a history entry.
  auto cfg = nlohmann::json::parse(slurp(store.blob_path("sha256:" + res.image.id)));
  CHECK(cfg["rootfs"]["diff_ids"].back() == "sha256:" + res.layer.digest_hex);
  CHECK(cfg["history"].back()["created_by"] == "sbx snapshot test");

  // A fresh sandbox on the new image sees the write and the deletion.
  auto new_layers = store.layer_dirs(res.image);
  REQUIRE(new_layers.size() == lowers.size() + 1);
  std::string view = t.base + "/view";
  t.mount_overlay(view, "lowerdir=" + lowerdir(new_layers), MS_RDONLY);
  CHECK(slurp(view + "/root/work/result.txt") == "42\n");
  CHECK_FALSE(stdfs::exists(view + "/etc/passwd"));
  CHECK(stdfs::exists(view + "/bin/busybox"));
  t.umount_all();

  // rmi of the snapshot keeps the parent intact.
  store.remove("snaptest:v1", t.base + "/run", false);
  for (auto& d : store.layer_dirs(parent)) CHECK(stdfs::exists(d));
  CHECK_FALSE(stdfs::exists(new_layers.back()));
  // Nothing left in the store's tmp dir.
  CHECK(stdfs::is_empty(t.base + "/root/tmp"));
}

TEST_CASE("snapshot_upper fails cleanly on an unknown image") {
  TempStore t;
  oci::Store store(t.base + "/root");
  stdfs::create_directories(t.base + "/upper");
  snapshot::FsSnapshotRequest req;
  req.upper_dir = t.base + "/upper";
  req.parent_image = "nosuchimage";
  CHECK_THROWS_WITH_AS(snapshot::snapshot_upper(store, req), doctest::Contains("not found"), Error);
  CHECK(store.list().empty());
}
