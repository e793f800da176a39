#include "runtime/linux/cgroup_freeze.h"

#include <pthread.h>
#include <unistd.h>

#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/sandbox_freezer.h"

namespace sbx::runtime {

namespace {

enum class Kind { V1, V2 };

Kind kind_of(const std::string& cg) {
  if (fs::exists(cg + "/cgroup.freeze")) return Kind::V2;
  if (fs::exists(cg + "/freezer.state")) return Kind::V1;
  throw Error("cannot freeze cgroup " + cg + ": it has neither cgroup.freeze (v2) nor freezer.state (v1 freezer)");
}

void request(const std::string& cg, bool freeze) {
  if (kind_of(cg) == Kind::V2)
    fs::write_existing(cg + "/cgroup.freeze", freeze ? "1" : "0");
  else
    fs::write_existing(cg + "/freezer.state", freeze ? "FROZEN" : "THAWED");
}

}  // namespace

bool cgroup_frozen(const std::string& cg) {
  if (kind_of(cg) == Kind::V2) {
    // cgroup.events has a "frozen 0|1" line once the freeze has completed.
    std::string ev = fs::read_file(cg + "/cgroup.events");
    return ev.find("frozen 1") != std::string::npos;
  }
  // v1 reports FREEZING until every task has stopped.
  std::string st = fs::read_file(cg + "/freezer.state");
  return st.rfind("FROZEN", 0) == 0;
}

CgroupFreeze::CgroupFreeze(std::vector<std::string> cgroups, std::chrono::milliseconds timeout,
                           std::vector<std::string> members) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto await_frozen = [&] {
    for (const auto& cg : cgroups) {
      auto delay = std::chrono::microseconds(100);
      while (!cgroup_frozen(cg)) {
        if (std::chrono::steady_clock::now() > deadline)
          throw Error("cgroup " + cg + " did not freeze within " + std::to_string(timeout.count()) +
                      " ms (a process may be stuck in uninterruptible I/O); retry, or stop the sandbox first");
        std::this_thread::sleep_for(delay);
        if (delay < std::chrono::milliseconds(10)) delay *= 2;
      }
    }
  };
  if (!members.empty() && cgroups.size() != 1)
    throw Error("CgroupFreeze: gathering members needs exactly one cgroup to gather into");
  sigset_t stop;
  ::sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaddset(&stop, sig);
  masked_ = ::pthread_sigmask(SIG_BLOCK, &stop, &old_mask_) == 0;
  try {
    if (!members.empty()) runtime::gather_processes(cgroups[0], members);
    for (const auto& cg : cgroups) {
      request(cg, true);
      frozen_.push_back(cg);
    }
    await_frozen();
    // A process that joined the members after the last pass (before the
    // freeze) runs on outside: move it in (a process moved into a frozen
    // cgroup freezes) and wait again, until a pass finds none.
    for (int round = 0; !members.empty() && runtime::gather_processes(cgroups[0], members) > 0; ++round) {
      if (round == 100) throw Error("processes keep joining the sandbox " + cgroups[0] + " while it is frozen; retry");
      await_frozen();
    }
  } catch (...) {
    try {
      thaw();
    } catch (const Error& e) {
      log::warn(std::string("thaw after a failed freeze: ") + e.what());
    }
    throw;
  }
}

void CgroupFreeze::thaw() {
  std::string failed;
  for (const auto& cg : frozen_) {
    try {
      request(cg, false);
    } catch (const Error& e) {
      failed += std::string(failed.empty() ? "" : "; ") + e.what();
    }
  }
  frozen_.clear();
  if (masked_) {  // signals that came meanwhile are delivered now, after the thaw
    masked_ = false;
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  if (!failed.empty()) throw Error("thaw sandbox cgroups: " + failed);
}

void CgroupFreeze::release() noexcept {
  frozen_.clear();
  if (masked_) {
    masked_ = false;
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
}

void thaw_cgroups(const std::vector<std::string>& cgroups) {
  for (const auto& cg : cgroups) request(cg, false);
}

CgroupFreeze::~CgroupFreeze() {
  try {
    thaw();
  } catch (const Error& e) {
    log::warn(e.what());
  }
}

}  // namespace sbx::runtime
