// CgroupFreeze on real cgroups this test creates (v1 freezer, and the v2
// hierarchy where one is mounted), with a real busy process.
#include <doctest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "snapshot/freezer.h"

using namespace sbx;

namespace {

/// Runs a child that counts in shared memory; moves it into `cg`.
void check_freeze(const std::string& hierarchy) {
  std::string cg = hierarchy + "/sbx-snaptest-" + std::to_string(::getpid());
  if (::mkdir(cg.c_str(), 0755) < 0) {
    MESSAGE("skipped " << hierarchy << ": cannot create a cgroup there");
    return;
  }
  auto* counter = static_cast<std::atomic<uint64_t>*>(
      ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (counter) std::atomic<uint64_t>(0);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) counter->fetch_add(1);
  }
  fs::write_existing(cg + "/cgroup.procs", std::to_string(pid));
  auto sample = [&] {
    uint64_t a = counter->load();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return counter->load() - a;
  };
  CHECK(sample() > 0);
  {
    snapshot::CgroupFreeze f({cg});
    CHECK(snapshot::cgroup_frozen(cg));
    CHECK(sample() == 0);
  }
  CHECK_FALSE(snapshot::cgroup_frozen(cg));
  CHECK(sample() > 0);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::munmap(counter, 4096);
  // The emptied cgroup is removed (rmdir succeeds once no process is left).
  for (int i = 0; i < 100 && ::rmdir(cg.c_str()) < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(fs::exists(cg));
}

}  // namespace

TEST_CASE("CgroupFreeze stops and resumes the processes of a v1 freezer cgroup") {
  if (!fs::exists("/sys/fs/cgroup/freezer/freezer.state") && !fs::exists("/sys/fs/cgroup/freezer/tasks")) {
    MESSAGE("skipped: no v1 freezer hierarchy");
    return;
  }
  check_freeze("/sys/fs/cgroup/freezer");
}

TEST_CASE("CgroupFreeze stops and resumes the processes of a v2 cgroup") {
  std::string h = fs::exists("/sys/fs/cgroup/unified/cgroup.procs") ? "/sys/fs/cgroup/unified"
                  : fs::exists("/sys/fs/cgroup/cgroup.freeze") || fs::exists("/sys/fs/cgroup/cgroup.subtree_control") ? "/sys/fs/cgroup" : "";
  if (h.empty()) {
    MESSAGE("skipped: no cgroup v2 hierarchy");
    return;
  }
  check_freeze(h);
}

TEST_CASE("CgroupFreeze refuses a directory that is not a cgroup") {
  CHECK_THROWS_WITH_AS(snapshot::CgroupFreeze({"/tmp"}), doctest::Contains("neither cgroup.freeze"), Error);
}
