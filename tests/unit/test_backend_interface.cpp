// The Backend interface as the layers above it use it (runtime/backend.h):
// the engine's wait with its time-out, reap, the process table, warm
// sandboxes, memory checkpoints through the backend that takes them, and the
// registry's gc reaching a backend's own release. Sandboxes here are state
// dirs the test writes around processes it forks (no namespaces, no runsc):
// what is checked is which backend operation the flow reaches.
#include <doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "engine/engine.h"
#include "runtime/backends.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/lifecycle.h"
#include "runtime/state.h"
#include "snapshot/catalog.h"
#include "snapshot/checkpoint.h"
#include "test_util.h"

using namespace sbx;
namespace stdfs = std::filesystem;

namespace {

/// A child that waits until it is killed (then reaped by the caller).
pid_t sleeper() {
  pid_t p = ::fork();
  if (p == 0) {
    ::pause();
    ::_exit(0);
  }
  REQUIRE(p > 0);
  return p;
}

/// RUN_ROOT/<id>/state.json of a "running" sandbox of `runtime` whose init is `pid`.
runtime::SandboxState write_sandbox(const std::string& run_root, char c, pid_t pid, const std::string& rt = "native") {
  runtime::SandboxState st;
  st.id = test::fake_id(c);
  st.runtime = rt;
  st.status = "running";
  st.created_ms = runtime::now_ms();
  st.pid = pid;
  st.pid_start = runtime::process_start_time(pid);
  std::string dir = runtime::sandbox_dir(run_root, st.id);
  stdfs::create_directories(dir);
  runtime::write_state(dir, st);
  return st;
}

/// Backend options for `run_root`.
runtime::BackendOptions run_root_options(const std::string& run_root) {
  runtime::BackendOptions o;
  o.run_root = run_root;
  return o;
}

}  // namespace

TEST_CASE("engine wait: the time-out reaches the backend; without one it waits for the end") {
  test::TempDir root("bi-root"), run_root("bi-run");
  pid_t child = sleeper();
  auto st = write_sandbox(run_root.path, 'a', child);
  engine::Engine eng({root.path, run_root.path});
  // Running: the wait gives up after its time-out (a dropped time-out would
  // block here for good).
  CHECK_FALSE(eng.wait(st.id, std::chrono::milliseconds(50)).has_value());
  CHECK(runtime::inspect_dir(runtime::sandbox_dir(run_root.path, st.id)).status == "running");
  // Ended, with its end record: the wait returns it.
  runtime::write_end_if_absent(runtime::sandbox_dir(run_root.path, st.id), runtime::EndRecord{"exit", 3, 0, 0});
  ::kill(child, SIGKILL);
  auto end = eng.wait(st.id);
  REQUIRE(end.has_value());
  CHECK(end->exit_code == 3);
  // reap: the init was this process's child; no zombie is left.
  eng.reap(st);
  errno = 0;
  CHECK(::waitpid(child, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("engine processes: a native sandbox's processes from its cgroups, as host pids") {
  test::TempDir root("bi-root"), run_root("bi-run"), cg("bi-cgroup");
  pid_t child = sleeper();
  auto st = write_sandbox(run_root.path, 'b', child);
  // A cgroup dir as the sandbox's state names it: only its cgroup.procs is read.
  fs::write_file_atomic(cg.path + "/cgroup.procs", std::to_string(child) + "\n");
  st.cgroups = {cg.path};
  runtime::write_state(runtime::sandbox_dir(run_root.path, st.id), st);
  engine::Engine eng({root.path, run_root.path});
  runtime::ProcessTable t = eng.processes(st.id.substr(0, 12));
  CHECK(t.titles == std::vector<std::string>{"UID", "PID", "PPID", "STAT", "TIME", "CMD"});
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0][1] == std::to_string(child));
  CHECK(t.rows[0][2] == std::to_string(::getpid()));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("runsc ps's table as a process table: titles from its header, the command keeps its spaces") {
  auto t = runtime::parse_runsc_ps(
      "W1129 10:00:00.000 a warning before the table\n"
      "UID       PID       PPID      C         TTY       STIME     TIME      CMD\n"
      "0         1         0         0         ?         10:00     0s        sleep\n"
      "0         7         1         0         ?         10:01     10ms      sh -c echo hi\n");
  CHECK(t.titles == std::vector<std::string>{"UID", "PID", "PPID", "C", "TTY", "STIME", "TIME", "CMD"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == std::vector<std::string>{"0", "1", "0", "0", "?", "10:00", "0s", "sleep"});
  CHECK(t.rows[1][1] == "7");
  CHECK(t.rows[1].back() == "sh -c echo hi");
  CHECK(runtime::parse_runsc_ps("runsc: no such container\n").rows.empty());
}

TEST_CASE("warm sandboxes: the native backend has them; gVisor refuses, and the engine's pool asks") {
  CHECK(runtime::backend_for("native")->supports(runtime::Operation::Warm));
  auto g = runtime::backend_for("gvisor");
  CHECK_FALSE(g->supports(runtime::Operation::Warm));
  CHECK_THROWS_WITH_AS(g->start_warm(SandboxSpec{}, false), doctest::Contains("gvisor: the warm pool holds native sandboxes only"),
                       Error);
  test::TempDir root("bi-root"), run_root("bi-run");
  engine::Engine eng({root.path, run_root.path});
  SandboxSpec spec;
  spec.runtime = "gvisor";
  CHECK_THROWS_WITH_AS(eng.make_pool(spec, false, 1), doctest::Contains("gvisor: the warm pool holds native sandboxes only"),
                       Error);
}

TEST_CASE("memory checkpoints go through the sandbox's backend; a refusal leaves nothing in the catalog") {
  test::TempDir root("bi-root"), run_root("bi-run");
  pid_t child = sleeper();
  auto st = write_sandbox(run_root.path, 'c', child);
  auto native = runtime::backend_for("native", run_root_options(run_root.path));
  runtime::SandboxRef ref{runtime::sandbox_dir(run_root.path, st.id), st};
  // The native backend refuses (without CRIU: the CRIU message; with it: this
  // made-up sandbox has no bundle), before anything is written.
  CHECK_THROWS_AS(snapshot::checkpoint_sandbox(root.path, *native, ref, "n1", false), Error);
  CHECK_FALSE(stdfs::exists(root.path + "/snapshots/checkpoints"));
  CHECK(snapshot::read_catalog(root.path).empty());
  // A memory snapshot recorded by a backend is restored by that backend: one
  // said to be native's reaches the native backend's refusal.
  snapshot::SnapshotRecord rec;
  rec.name = "m1";
  rec.kind = "memory";
  rec.runtime = "native";
  rec.id = std::string(32, 'd');
  rec.created = snapshot::now_rfc3339();
  snapshot::put_record(root.path, rec);
  engine::Engine eng({root.path, run_root.path});
  engine::RestoreRequest rr;
  rr.snapshot = "m1";
  // (said to be native's, it reaches the native backend, which finds no data)
  CHECK_THROWS_WITH_AS(eng.restore(rr), doctest::Contains("memory snapshot 'm1'"), Error);
  rr.count = 0;
  CHECK_THROWS_WITH_AS(eng.restore(rr), "--count must be between 1 and 4096", Error);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("gc reaches a backend's own release through the registry; the record of the sandbox stays") {
  test::TempDir run_root("bi-run");
  // A created gVisor sandbox whose monitor was killed (its pid is gone); no
  // runsc state in its dir, so the release runs no runsc.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  auto st = write_sandbox(run_root.path, 'e', ::getpid(), "gvisor");
  st.pid = gone;
  st.pid_start = 1;
  st.creator_pid = gone;
  st.creator_start = 1;
  const std::string dir = runtime::sandbox_dir(run_root.path, st.id);
  runtime::write_state(dir, st);
  stdfs::create_directories(dir + "/runsc");
  // Without backends (the core's gc alone) nothing of a backend's runs.
  runtime::gc(run_root.path, nullptr);
  CHECK_FALSE(stdfs::exists(dir + "/released"));
  // The registry's gc: the gVisor backend releases it once, records it killed.
  auto removed = runtime::gc_sandboxes(run_root.path);
  CHECK(std::find(removed.begin(), removed.end(), dir + " (runsc state and cgroups)") != removed.end());
  CHECK(stdfs::exists(dir + "/released"));
  CHECK(stdfs::exists(dir + "/state.json"));  // ps -a and rm still see it
  auto info = runtime::inspect_dir(dir);
  REQUIRE(info.end.has_value());
  CHECK(info.end->reason == "killed");
  removed = runtime::gc_sandboxes(run_root.path);
  CHECK(std::find(removed.begin(), removed.end(), dir + " (runsc state and cgroups)") == removed.end());
  // rm through its backend removes it.
  runtime::backend_for(st, run_root_options(run_root.path))->remove(st.id, true);
  CHECK_FALSE(stdfs::exists(dir));
}
