// CgroupFreeze on real cgroups this test creates (v1 freezer, and the v2
// hierarchy where one is mounted), with a real busy process.
#include <doctest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/sandbox_freezer.h"
#include "runtime/linux/cgroup_freeze.h"

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
  // Running: the counter moves within 10 s (on a loaded host a runnable
  // process may wait well over 100 ms for a core: a liveness bound, not a
  // speed). Frozen: it stays still for 200 ms.
  auto moves = [&] {
    uint64_t a = counter->load();
    for (int i = 0; i < 1000; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (counter->load() != a) return true;
    }
    return false;
  };
  auto still = [&] {
    uint64_t a = counter->load();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return counter->load() == a;
  };
  CHECK(moves());
  {
    runtime::CgroupFreeze f({cg});
    CHECK(runtime::cgroup_frozen(cg));
    CHECK(still());
  }
  CHECK_FALSE(runtime::cgroup_frozen(cg));
  CHECK(moves());
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
  CHECK_THROWS_WITH_AS(runtime::CgroupFreeze({"/tmp"}), doctest::Contains("neither cgroup.freeze"), Error);
}

namespace {

std::set<pid_t> procs(const std::string& cg) {
  std::set<pid_t> out;
  std::ifstream in(cg + "/cgroup.procs");
  for (pid_t p; in >> p;) out.insert(p);
  return out;
}

}  // namespace

// The lazy freezer of a hybrid host (runtime/linux/sandbox_freezer.h): a shell that
// forks /bin/true without pause lives in a v1 pids cgroup (as a sandbox's
// processes do); its processes are gathered into a fresh cgroup2 cgroup and
// frozen there. While frozen, nothing can fork, so the sets are stable: every
// process of the pids cgroup must be inside the frozen one.
TEST_CASE("CgroupFreeze with members gathers a forking process tree into a cgroup2 freezer") {
  const std::string v1 = "/sys/fs/cgroup/pids", v2 = "/sys/fs/cgroup/unified";
  if (!fs::exists(v1 + "/cgroup.procs") || !fs::exists(v2 + "/cgroup.procs")) {
    MESSAGE("skipped: not a hybrid host (needs v1 pids and cgroup2 at " << v2 << ")");
    return;
  }
  const std::string tag = "sbx-snaptest-g" + std::to_string(::getpid());
  const std::string member = v1 + "/" + tag, freezer = v2 + "/" + tag;
  REQUIRE(::mkdir(member.c_str(), 0755) == 0);
  REQUIRE(::mkdir(freezer.c_str(), 0755) == 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", "while :; do /bin/true; done", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  fs::write_existing(member + "/cgroup.procs", std::to_string(pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it fork a while
  size_t rounds_with_children = 0;
  for (int round = 0; round < 5; ++round) {
    runtime::CgroupFreeze f({freezer}, std::chrono::milliseconds(5000), {member});
    CHECK(runtime::cgroup_frozen(freezer));
    std::set<pid_t> in_member = procs(member), in_freezer = procs(freezer);
    CHECK(in_member.count(pid) == 1);
    for (pid_t p : in_member) CHECK_MESSAGE(in_freezer.count(p) == 1, "process " << p << " escaped the freeze");
    if (in_member.size() > 1) ++rounds_with_children;
    // Frozen means frozen: the set does not change while we wait.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(procs(member) == in_member);
    f.thaw();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  MESSAGE("rounds that froze a forked child too: " << rounds_with_children << "/5");
  // Its forks go on after the thaw (the shell was not left frozen).
  CHECK_FALSE(runtime::cgroup_frozen(freezer));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  for (int i = 0; i < 200 && (::rmdir(freezer.c_str()) < 0 || ::rmdir(member.c_str()) < 0); ++i) {
    for (pid_t p : procs(member)) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_FALSE(fs::exists(freezer));
  CHECK_FALSE(fs::exists(member));
}

TEST_CASE("gather_processes moves nothing when every process is inside") {
  const std::string v1 = "/sys/fs/cgroup/pids", v2 = "/sys/fs/cgroup/unified";
  if (!fs::exists(v1 + "/cgroup.procs") || !fs::exists(v2 + "/cgroup.procs")) {
    MESSAGE("skipped: not a hybrid host");
    return;
  }
  const std::string tag = "sbx-snaptest-n" + std::to_string(::getpid());
  const std::string member = v1 + "/" + tag, freezer = v2 + "/" + tag;
  REQUIRE(::mkdir(member.c_str(), 0755) == 0);
  REQUIRE(::mkdir(freezer.c_str(), 0755) == 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  fs::write_existing(member + "/cgroup.procs", std::to_string(pid));
  CHECK(runtime::gather_processes(freezer, {member}) == 1);
  CHECK(procs(freezer) == std::set<pid_t>{pid});
  CHECK(runtime::gather_processes(freezer, {member}) == 0);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // An exited process is simply not there to move.
  CHECK(runtime::gather_processes(freezer, {member}) == 0);
  for (int i = 0; i < 100 && (::rmdir(freezer.c_str()) < 0 || ::rmdir(member.c_str()) < 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(fs::exists(freezer));
  CHECK_FALSE(fs::exists(member));
}
