// Runs real runsc (Debian's package) on a tiny busybox layer; skipped with a
// message when runsc is not installed.
#include <doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/error.h"
#include "runtime/linux/cgroups.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "test_util.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {
struct BusyboxLayers {
  std::string base;
  std::vector<std::string> layers;
  BusyboxLayers() {
    char tmpl[] = "/tmp/sbx-gvtest.XXXXXX";
    base = ::mkdtemp(tmpl);
    // Two layers: busybox itself, and a layer on top adding a file.
    std::string l1 = base + "/l1", l2 = base + "/l2";
    stdfs::create_directories(l1 + "/bin");
    for (auto d : {"proc", "dev", "sys", "tmp", "etc"}) stdfs::create_directories(l1 + "/" + d);
    stdfs::copy_file("/bin/busybox", l1 + "/bin/busybox");
    for (auto a : {"sh", "cat", "true", "sleep", "echo", "test"}) stdfs::create_symlink("busybox", l1 + "/bin/" + a);
    stdfs::create_directories(l2 + "/etc");
    FILE* f = std::fopen((l2 + "/etc/marker").c_str(), "w");
    std::fputs("top\n", f);
    std::fclose(f);
    layers = {l1, l2};
  }
  ~BusyboxLayers() { stdfs::remove_all(base); }
};

SandboxSpec spec_for(const BusyboxLayers& b, std::vector<std::string> args) {
  SandboxSpec s;
  static int n = 0;
  char id[65];
  std::snprintf(id, sizeof id, "%08x%056d", static_cast<unsigned>(::getpid()), ++n);
  s.id = id;
  s.layer_dirs = b.layers;
  s.process.args = std::move(args);
  s.process.env = {"PATH=/bin"};
  s.process.capabilities = default_capabilities();
  return s;
}
}  // namespace

TEST_CASE("gvisor backend runs commands under real runsc and leaves nothing behind") {
  std::string runsc = test::runsc_or_skip();
  if (runsc.empty()) return;
  CHECK(runtime::runsc_version(runsc).find("runsc version") == 0);
  BusyboxLayers b;
  std::string run_root = b.base + "/run";
  runtime::GvisorOptions o{runsc, run_root, {}};

  // Exit codes pass through; the upper layer is visible; writes work and do not touch the layers.
  CHECK(runtime::run_gvisor(spec_for(b, {"sh", "-c", "test \"$(cat /etc/marker)\" = top && echo x > /etc/new && test -f /etc/new"}), o).exit_code == 0);
  CHECK_FALSE(stdfs::exists(b.layers[1] + "/etc/new"));
  CHECK(runtime::run_gvisor(spec_for(b, {"sh", "-c", "exit 7"}), o).exit_code == 7);
  auto killed = runtime::run_gvisor(spec_for(b, {"sh", "-c", "kill -9 $$"}), o);
  CHECK(killed.exit_code == 137);
  CHECK(killed.signal == 9);
  try {
    runtime::run_gvisor(spec_for(b, {"/bin/no-such-command"}), o);
    FAIL("a missing command must throw");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitNotFound);
    CHECK(std::string(e.what()).find("not found") != std::string::npos);
  }

  auto t = spec_for(b, {"sleep", "30"});
  t.timeout = std::chrono::milliseconds(1500);
  auto start = std::chrono::steady_clock::now();
  auto st = runtime::run_gvisor(t, o);
  CHECK(st.timed_out);
  CHECK(st.exit_code == kExitTimeout);
  // (The sandbox is killed through runsc and runsc run ends by itself: no
  // slow `runsc delete` of a container whose runsc was SIGKILLed.)
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(6));

  // A memory bomb under a memory limit: the host's memory cgroup (made by
  // sbx, used by runsc as it is) OOM-kills the sandbox; reported as natively.
  auto m = spec_for(b, {"sh", "-c", "x=0123456789abcdef; while :; do x=$x$x; done"});
  m.resources.memory_bytes = 48 << 20;
  auto oom = runtime::run_gvisor(m, o);
  CHECK(oom.oom_killed);
  CHECK(oom.oom_kills > 0);
  CHECK(oom.exit_code == 137);
  auto dirs = runtime::sandbox_cgroup_dirs(m.id);
  CHECK_FALSE(dirs.empty());
  for (const auto& d : dirs) CHECK_MESSAGE(!stdfs::exists(d), d);
  // Without a limit hit, no OOM is reported.
  auto fine = spec_for(b, {"true"});
  fine.resources.memory_bytes = 48 << 20;
  CHECK_FALSE(runtime::run_gvisor(fine, o).oom_killed);

  // Nothing left: no state dir, no runsc containers.
  CHECK(stdfs::is_empty(run_root));
}

TEST_CASE("gvisor backend refuses what it cannot honour") {
  BusyboxLayers b;
  auto s = spec_for(b, {"true"});
  s.devices.push_back({"/dev/nvidia0", 'c', 195, 0, 0666, 0, 0, ""});
  CHECK_THROWS_WITH_AS(runtime::run_gvisor(s, {"", b.base + "/run", {}}), doctest::Contains("nvproxy"), Error);
  CHECK_THROWS_WITH_AS(runtime::find_runsc("/nonexistent/runsc"), doctest::Contains("--runsc"), Error);
}
