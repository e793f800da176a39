// Freezing a sandbox's processes while its state is read, so a snapshot is
// consistent (no file half-written between two reads). Uses the cgroup
// freezer: v1 freezer.state (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst)
// or v2 cgroup.freeze / cgroup.events (Documentation/admin-guide/cgroup-v2.rst).
#pragma once
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

namespace sbx::runtime {

/// Freezes every process in the given cgroups for its lifetime and thaws them
/// when destroyed (also on exceptions). While frozen, SIGINT, SIGTERM, SIGHUP
/// and SIGQUIT are blocked in the calling thread (a Ctrl-C would otherwise end
/// sbx with the sandbox left frozen); they are delivered after the thaw. A
/// SIGKILLed sbx leaves it frozen until the next snapshot of it (which thaws
/// at its end) or `sbx rm`. Each path is a cgroup directory: a v1
/// freezer cgroup (has freezer.state) or a v2 cgroup (has cgroup.freeze).
/// Only pass cgroups sbx created for the sandbox.
class CgroupFreeze {
 public:
  /// Freezes and waits (up to `timeout`) until the kernel reports every cgroup
  /// frozen. With `members` (a freezer made lazily, runtime/linux/sandbox_freezer.h:
  /// the sandbox's own cgroups), processes listed there but not in cgroups[0]
  /// are moved in before the freeze and once more after it (one that joined
  /// late, e.g. an `sbx exec` that read the old state.json), then the freeze
  /// is awaited again. Throws sbx::Error naming the cgroup when it is neither
  /// v1 nor v2, a write fails, or the freeze does not complete in time (the
  /// cgroups frozen so far are thawed first).
  explicit CgroupFreeze(std::vector<std::string> cgroups,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
                        std::vector<std::string> members = {});
  ~CgroupFreeze();
  CgroupFreeze(const CgroupFreeze&) = delete;
  CgroupFreeze& operator=(const CgroupFreeze&) = delete;

  /// Thaws now (idempotent). Throws sbx::Error when a thaw write fails.
  void thaw();
  /// Leaves the cgroups frozen (the destructor no longer thaws them): a
  /// paused sandbox (`docker pause`); thaw_cgroups() ends it.
  void release() noexcept;

 private:
  std::vector<std::string> frozen_;
  sigset_t old_mask_{};
  bool masked_ = false;
};

/// True when the cgroup (v1 freezer or v2) reports its processes frozen.
bool cgroup_frozen(const std::string& cgroup);

/// Thaws cgroups a released CgroupFreeze left frozen (`docker unpause`).
/// Throws sbx::Error naming the cgroup when a write fails.
void thaw_cgroups(const std::vector<std::string>& cgroups);

}  // namespace sbx::runtime
