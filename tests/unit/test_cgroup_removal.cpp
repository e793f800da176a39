// remove_cgroup_dirs on real cgroups this test creates (every v1 hierarchy
// that takes a child, and the v2 one), with a real process in them.
#include <doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/fs.h"
#include "runtime/linux/cgroup_removal.h"

using namespace sbx;

namespace {

/// A child cgroup "sbx-rmtest-PID" in each of these hierarchies that lets us
/// make one (v1 cpuset is left out: it takes no process before cpus/mems).
std::vector<std::string> make_test_cgroups() {
  std::vector<std::string> made;
  for (const char* h : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/devices", "/sys/fs/cgroup/memory",
                        "/sys/fs/cgroup/unified"}) {
    if (!fs::exists(std::string(h) + "/cgroup.procs")) continue;
    std::string dir = std::string(h) + "/sbx-rmtest-" + std::to_string(::getpid());
    if (::mkdir(dir.c_str(), 0755) == 0) made.push_back(dir);
  }
  return made;
}

}  // namespace

TEST_CASE("remove_cgroup_dirs kills what is in the cgroups and removes every dir") {
  std::vector<std::string> dirs = make_test_cgroups();
  if (dirs.empty()) {
    MESSAGE("skipped: cannot create a cgroup here");
    return;
  }
  pid_t child = ::fork();
  if (child == 0) {
    for (;;) ::pause();
  }
  for (const auto& d : dirs) fs::write_existing(d + "/cgroup.procs", std::to_string(child));
  dirs.push_back(dirs[0] + "-never-made");  // a dir that is already gone is fine
  CHECK(runtime::remove_cgroup_dirs(dirs) == 0);
  for (const auto& d : dirs) CHECK_FALSE(fs::exists(d));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("remove_cgroup_dirs gives up on a dir that stays busy once its budget is spent, and says so") {
  std::vector<std::string> dirs = make_test_cgroups();
  if (dirs.empty()) {
    MESSAGE("skipped: cannot create a cgroup here");
    return;
  }
  // A child cgroup keeps its parent busy with no process in it: no kill helps.
  std::string inner = dirs[0] + "/inner";
  REQUIRE(::mkdir(inner.c_str(), 0755) == 0);
  CHECK(runtime::remove_cgroup_dirs(dirs, 50) == EBUSY);
  CHECK(fs::exists(dirs[0]));
  for (size_t i = 1; i < dirs.size(); ++i) CHECK_FALSE(fs::exists(dirs[i]));  // the others went
  ::rmdir(inner.c_str());
  CHECK(runtime::remove_cgroup_dirs({dirs[0]}) == 0);
  CHECK_FALSE(fs::exists(dirs[0]));
}
