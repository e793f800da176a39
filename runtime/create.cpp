// What the detached start paths of every backend share (runtime/lifecycle.h;
// native: runtime/native/create.h, gVisor: runtime/gvisor/gvisor_lifecycle.h):
// the crash points of the tests, the "creating" state, and the step that
// marks a started sandbox "running" (or removes it on a failure).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "runtime/backend.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/clone_child.h"  // other_threads_exist

namespace sbx::runtime {

void crash_point(const char* step) noexcept {
  // Test-only (tests/integration/test_lifecycle_crash.sh): SBX_TEST_CRASH_AT=<step>
  // makes sbx SIGKILL itself at that step, to prove that every exit path leaves
  // state that `ps` reports truthfully and `rm -f`/`gc` clean up.
  static const char* at = std::getenv("SBX_TEST_CRASH_AT");
  if (at && std::strcmp(at, step) == 0) ::raise(SIGKILL);
}

SandboxState creating_state(const SandboxSpec& spec) {
  SandboxState st;
  st.id = spec.id;
  st.name = spec.name;
  st.image_id = spec.image_id;
  st.image_ref = spec.image_ref;
  st.runtime = spec.runtime;
  st.status = "creating";
  st.created_ms = now_ms();
  st.labels = spec.labels;
  st.command = spec.process.args;
  st.timeout_ms = spec.timeout.count();
  st.idle_timeout_ms = spec.idle_timeout.count();
  st.creator_pid = ::getpid();
  st.creator_start = process_start_time(::getpid());
  st.creator_shared = other_threads_exist();
  return st;
}

void start_created(const std::string& run_root, const std::string& id, const std::function<void()>& start,
                   const std::function<void()>& commit, Backend* backend) {
  const std::string dir = sandbox_dir(run_root, id);
  try {
    start();
    crash_point("create-started");
    SandboxState st = read_state(dir);
    st.status = "running";
    st.started_ms = now_ms();
    write_state(dir, st);
    if (commit) commit();
    crash_point("create-done");
  } catch (...) {
    try {
      remove_sandbox(run_root, id, true, backend);
    } catch (const Error& e) {
      log::warn("cleaning up after a failed create: " + std::string(e.what()) + "; 'sbx gc' will retry");
    }
    throw;
  }
}

}  // namespace sbx::runtime
