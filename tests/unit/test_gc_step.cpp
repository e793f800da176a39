// gc_step (runtime/lifecycle.h): the bounded gc a start runs. It looks at a
// few entries of the run root each time, not at every sandbox, and yet
// reaches every dead sandbox within a bounded number of steps.
#include <doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/lifecycle.h"
#include "runtime/state.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;
using sbx::test::TempDir;

namespace {

// A 64-hex id from a number.
std::string id_of(int n) {
  char buf[65];
  std::snprintf(buf, sizeof buf, "%064x", n);
  return buf;
}

// A `sbx run` sandbox: alive (init and owner: this process) or left by a
// killed sbx (its init and owner: `gone`, a process that has ended).
void write_run_sandbox(const std::string& run_root, int n, pid_t owner) {
  const bool alive = owner == ::getpid();
  SandboxState st;
  st.id = id_of(n);
  st.runtime = "native";
  st.status = "running";
  st.created_ms = now_ms();
  st.pid = owner;
  st.pid_start = alive ? process_start_time(owner) : 1;
  st.owner_pid = owner;
  st.owner_start = alive ? process_start_time(owner) : 1;
  std::string dir = sandbox_dir(run_root, st.id);
  std::filesystem::create_directories(dir);
  write_state(dir, st);
}

}  // namespace

TEST_CASE("gc_step looks at a few entries per step and still reaches every dead sandbox") {
  TempDir t("gc-step");
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const int live = 200, dead = 5;
  for (int i = 0; i < live; ++i) write_run_sandbox(t.path, i, ::getpid());
  for (int i = 0; i < dead; ++i) write_run_sandbox(t.path, 1000 + i, gone);
  auto dead_left = [&] {
    int c = 0;
    for (int i = 0; i < dead; ++i) c += std::filesystem::exists(sandbox_dir(t.path, id_of(1000 + i)));
    return c;
  };
  // One step removes at most what it looked at: a few, not all five.
  auto first = gc_step(t.path, nullptr);
  CHECK(first.size() < static_cast<size_t>(dead));
  // Steps of ~5 entries: every entry is reached within (entries / 5) steps, plus one around.
  int steps = 1;
  while (dead_left() > 0 && steps < (live + dead) / 4 + 5) {
    gc_step(t.path, nullptr);
    ++steps;
  }
  CHECK(dead_left() == 0);
  MESSAGE("all dead sandboxes found in " << steps << " steps");
  // The live ones are all there.
  int alive = 0;
  for (int i = 0; i < live; ++i) alive += std::filesystem::exists(sandbox_dir(t.path, id_of(i)));
  CHECK(alive == live);
  // Around again: a later dead one is found too.
  write_run_sandbox(t.path, 2000, gone);
  for (int s = 0; s < live / 4 + 5 && std::filesystem::exists(sandbox_dir(t.path, id_of(2000))); ++s)
    gc_step(t.path, nullptr);
  CHECK_FALSE(std::filesystem::exists(sandbox_dir(t.path, id_of(2000))));
}
