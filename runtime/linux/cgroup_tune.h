// The host-wide cgroup2 mount option `favordynmods` (kernel docs
// admin-guide/cgroup-v2.rst "favordynmods"; also the boot parameter
// cgroup_favordynmods=). Moving a process into a cgroup takes the global
// cgroup_threadgroup_rwsem for writing, which normally waits for an RCU
// grace period (7–26 ms measured on a hybrid host; it serialises parallel
// sandbox starts). With favordynmods the readers (fork, exit) pay a little
// more instead and the attach takes ~0.1 ms. The lock is global, so the
// option helps v1 attaches too on a hybrid host. Host-wide: sbx reports it
// (`sbx info`) and changes it only when asked (`sbx system tune`).
#pragma once
#include <optional>
#include <string>

namespace sbx::runtime {

/// The host's cgroup2 mount that carries the option: /sys/fs/cgroup
/// (unified) or /sys/fs/cgroup/unified (hybrid), as /proc/mounts lists it.
struct Cgroup2Mount {
  std::string path;          ///< mount point
  std::string options;       ///< its options as /proc/mounts shows them ("rw,relatime,…")
  bool favordynmods = false; ///< "favordynmods" is among them
};

/// The cgroup2 mount (nullopt on a legacy host without one). Reads
/// `mounts` (default /proc/mounts; tests give a file). No throw.
std::optional<Cgroup2Mount> cgroup2_mount(const std::string& mounts = "/proc/mounts") noexcept;

/// The option string a remount of `m` passes to keep every cgroup2 option it
/// has (nsdelegate, memory_localevents, memory_recursiveprot, …: a cgroup2
/// remount resets the ones not named) with favordynmods `on` or off.
std::string cgroup2_remount_options(const Cgroup2Mount& m, bool on);

/// Turns favordynmods on or off by remounting the cgroup2 mount
/// (mount(2) MS_REMOUNT, the other options kept). Idempotent: returns the
/// state before; does nothing when it is already `on`. Throws sbx::Error:
/// no cgroup2 mount, not root, or the kernel lacks the option (< 6.0).
bool set_favordynmods(bool on);

}  // namespace sbx::runtime
