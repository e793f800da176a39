// The engine facade (engine/engine.h) driven directly, with no CLI: import the
// busybox test image into a temp store, create a sandbox, exec in it (stdout
// and exit code), cp in and out, take an fs snapshot, rm it; nothing may be
// left in the temp run root. And a backend's refusal is one clear error,
// whichever way it is reached.
#include <doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "engine/engine.h"
#include "runtime/backends.h"
#include "runtime/image_config.h"
#include "runtime/native/native_backend.h"
#include "test_util.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {

/// tests/images/out (or $SBX_IMAGES) when it holds busybox-oci; else "".
std::string busybox_layout() {
  std::string d;
  if (const char* e = std::getenv("SBX_IMAGES")) {
    d = e;
  } else {
    const char* src = std::getenv("SBX_TEST_SRC");
    d = std::string(src ? src : ".") + "/tests/images/out";
  }
  d += "/busybox-oci";
  return stdfs::exists(d + "/index.json") ? d : "";
}

/// Everything under `dir` (relative paths), for the leak check; but the
/// holder's program (.init, written once per run root, kept).
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = stdfs::recursive_directory_iterator(dir, ec); !ec && it != stdfs::recursive_directory_iterator();
       it.increment(ec)) {
    std::string rel = stdfs::relative(it->path(), dir).string();
    if (rel == ".init" || rel.rfind(".init/", 0) == 0) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Runs `args` in sandbox `id` through the engine; returns {exit code, stdout}.
std::pair<int, std::string> exec_capture(engine::Engine& eng, const std::string& id, std::vector<std::string> args) {
  test::TempDir tmp("engine-out");
  std::string path = tmp.path + "/stdout";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  engine::ExecRequest req;
  req.sandbox = id;
  req.args = std::move(args);
  req.stdout_fd = fd;
  engine::ExecResult r;
  try {
    r = eng.exec(req);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return {r.exit_code, fs::read_file(path)};
}

}  // namespace

TEST_CASE("engine: import, create, exec, cp, fs snapshot, rm without the CLI") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root (namespaces, cgroups, overlay)");
    return;
  }
  std::string layout = busybox_layout();
  if (layout.empty()) {
    MESSAGE("skipped: tests/images/out/busybox-oci is missing (run tests/images/build.sh busybox)");
    return;
  }
  test::TempDir root("engine-root"), run_root("engine-run"), host("engine-host");
  engine::Engine eng({root.path, run_root.path});
  const auto before = entries(run_root.path);

  engine::ImportRequest imp;
  imp.path = layout;
  imp.name = "busybox:engine-test";
  oci::ImageRecord img = eng.import_image(imp);
  CHECK(img.id.size() == 64);
  REQUIRE(eng.list_images().size() == 1);
  CHECK(eng.inspect_image("busybox:engine-test").find(img.id) != std::string::npos);

  // The spec as a front end builds it: the image's layers and config.
  oci::Store store(root.path);
  engine::SandboxRequest req;
  req.spec.id = runtime::new_sandbox_id();
  req.spec.image_ref = "busybox:engine-test";
  req.spec.image_id = img.id;
  req.spec.layer_dirs = store.layer_dirs(img);
  req.spec.process.capabilities = default_capabilities();
  req.spec.resources.pids_limit = 64;
  runtime::ProcessOverrides o;
  o.command = {"sleep", "300"};
  runtime::apply_image_config(req.spec, img.config, o);
  const std::string id = eng.create(req);
  REQUIRE(id == req.spec.id);
  bool removed = false;
  struct Cleanup {
    engine::Engine& eng;
    const std::string& id;
    bool& removed;
    ~Cleanup() {
      if (!removed) try {
          eng.remove(id, true);
        } catch (...) {
        }
    }
  } cleanup{eng, id, removed};

  CHECK(eng.inspect(id.substr(0, 12)).status == "running");
  auto listed = eng.list({});
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].state.id == id);

  // exec: stdout through the fd we gave, exit code as the command's.
  auto [code, out] = exec_capture(eng, id, {"echo", "hello from exec"});
  CHECK(code == 0);
  CHECK(out == "hello from exec\n");
  CHECK(exec_capture(eng, id, {"sh", "-c", "exit 7"}).first == 7);
  // A missing command is an error carrying exit code 127 (as `sbx exec` exits).
  int not_found = 0;
  try {
    exec_capture(eng, id, {"no-such-command"});
  } catch (const Error& e) {
    not_found = e.exit_code();
  }
  CHECK(not_found == 127);

  // cp in, read it inside, cp out, compare.
  {
    std::ofstream(host.path + "/in.txt") << "copied in\n";
  }
  eng.copy_in(id, host.path + "/in.txt", "/tmp/in.txt");
  auto [cat_code, cat_out] = exec_capture(eng, id, {"cat", "/tmp/in.txt"});
  CHECK(cat_code == 0);
  CHECK(cat_out == "copied in\n");
  CHECK(exec_capture(eng, id, {"sh", "-c", "echo made inside > /tmp/out.txt"}).first == 0);
  eng.copy_out(id, "/tmp/out.txt", host.path + "/out.txt");
  CHECK(fs::read_file(host.path + "/out.txt") == "made inside\n");

  // A sparse file comes out sparse: its holes are neither read nor written.
  CHECK(exec_capture(eng, id, {"sh", "-c", "printf head >/tmp/sparse && truncate -s 1073741824 /tmp/sparse && "
                                           "printf tail >>/tmp/sparse"}).first == 0);
  auto sparse = eng.copy_out(id, "/tmp/sparse", host.path + "/sparse");
  struct stat sst {};
  REQUIRE(::stat((host.path + "/sparse").c_str(), &sst) == 0);
  CHECK(sst.st_size == 1073741828);
  CHECK(sst.st_blocks * 512 < (1 << 20));
  CHECK(sparse.bytes < (1u << 20));
  {
    char head[5] = {};
    int fd = ::open((host.path + "/sparse").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(::pread(fd, head, 4, 0) == 4);
    CHECK(::pread(fd, head + 4, 1, 1073741827) == 1);
    ::close(fd);
    CHECK(std::string(head, 5) == "headl");
  }
  // Past the bound: EFBIG, and nothing of the copy stays.
  int bound_err = 0;
  try {
    eng.copy_out(id, "/tmp/out.txt", host.path + "/bounded", 4);
  } catch (const Error& e) {
    bound_err = e.err();
  }
  CHECK(bound_err == EFBIG);
  CHECK_FALSE(stdfs::exists(host.path + "/bounded"));

  // fs snapshot: the writable layer as a new image with both files.
  engine::FsSnapshotRequest snap;
  snap.sandbox = id;
  snap.name = "busybox:engine-snap";
  auto res = eng.snapshot_fs(snap);
  CHECK(res.image.id.size() == 64);
  CHECK(res.image.id != img.id);
  CHECK(eng.list_images().size() == 2);

  auto stats = eng.stats(id);
  CHECK(stats.pids >= 1);  // sleep, at least (pids.current of its cgroup)

  eng.remove(id, true);
  removed = true;
  CHECK_THROWS_AS(eng.resolve(id), Error);
  CHECK(entries(run_root.path) == before);  // nothing left in the run root

  eng.remove_image("busybox:engine-snap", false);
  eng.remove_image("busybox:engine-test", false);
  CHECK(eng.list_images().empty());
  eng.gc();
}

TEST_CASE("engine: a backend's refusal is one clear error, decided by the backend") {
  SUBCASE("the gVisor backend refuses directory snapshots") {
    auto b = runtime::backend_for("gvisor");
    CHECK_FALSE(b->supports(runtime::Operation::DirSnapshot));
    CHECK_THROWS_WITH_AS(b->require(runtime::Operation::DirSnapshot),
                         "gvisor: directory snapshots need a native sandbox (its files live in runsc's memory)", Error);
  }
  SUBCASE("the engine reaches the same refusal for a gVisor sandbox") {
    test::TempDir root("engine-root"), run_root("engine-run");
    // A sandbox as state.json records it; the refusal comes before anything
    // touches a process, so no runsc is needed.
    runtime::SandboxState st;
    st.id = test::fake_id('a');
    st.runtime = "gvisor";
    st.status = "running";
    std::string dir = runtime::sandbox_dir(run_root.path, st.id);
    stdfs::create_directories(dir);
    runtime::write_state(dir, st);
    engine::Engine eng({root.path, run_root.path});
    engine::DirSnapshotRequest req;
    req.sandbox = st.id.substr(0, 12);
    req.path = "/tmp";
    CHECK_THROWS_WITH_AS(eng.snapshot_dir(req),
                         "gvisor: directory snapshots need a native sandbox (its files live in runsc's memory)", Error);
    engine::FsSnapshotRequest fs_req;
    fs_req.sandbox = st.id;
    CHECK_THROWS_WITH_AS(eng.snapshot_fs(fs_req), doctest::Contains("gvisor: file system snapshots need a native sandbox"),
                         Error);
  }
  SUBCASE("the native backend refuses a memory checkpoint of a sandbox that is not running, before asking CRIU") {
    // (The CRIU message for a running one: test_snapshot_checkpoint.cpp, test_snapshot.sh.)
    auto b = runtime::backend_for("native");
    runtime::SandboxRef ref;
    ref.state.id = test::fake_id('b');
    CHECK_THROWS_WITH_AS(b->check_checkpoint(ref), doctest::Contains("is not running"), Error);
  }
  SUBCASE("an unknown backend name is refused by the registry") {
    CHECK_THROWS_WITH_AS(runtime::backend_for("kvm"), "invalid --runtime 'kvm': use native or gvisor", Error);
    CHECK_NOTHROW(runtime::validate_backend_name("native"));
  }
}
