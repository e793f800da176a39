// A cgroup that can freeze every process of a running native sandbox, for
// consistent snapshots and pause. Only for sandboxes whose processes are host
// processes in their own cgroups: its caller is the native backend
// (runtime/native/writable_layer.h freeze_cgroups); a gVisor sandbox's
// cgroups hold runsc, and it pauses through runsc.
//
// A sandbox gets no freezer at start on a hybrid host (each v1 cgroup costs
// start time, and nothing but a snapshot needs one; runtime/linux/cgroups.cpp), so
// one is made lazily the first time a snapshot asks: "sbx-<id12>" in the
// cgroup2 tree (hybrid) or the v1 freezer hierarchy (legacy), recorded in
// state.json's "cgroups" before it is created, so `sbx rm` and `sbx gc`
// remove it like the others and `sbx exec` joins it. The sandbox's processes
// are moved into it; since they may fork meanwhile, moving repeats until the
// sandbox's own cgroups (pids, devices, ...) list no process outside it. A
// child forked by a process already inside is born inside (cgroup migration
// and fork are serialised by the kernel's cgroup_threadgroup_rwsem).
// Kernel docs: admin-guide/cgroup-v2.rst ("Processes", "Core Interface
// Files": cgroup.freeze), admin-guide/cgroup-v1/freezer-subsystem.rst.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sbx::runtime {

/// What to freeze for one sandbox.
struct SandboxFreezer {
  /// Cgroup dirs to freeze (v1 freezer.state or v2 cgroup.freeze).
  std::vector<std::string> cgroups;
  /// When cgroups[0] was made lazily: the sandbox's own cgroups, which list
  /// every process of it; gather_processes() moves those still outside in.
  /// Empty when the sandbox's own cgroups are freezable (unified or legacy
  /// host: they were made at start).
  std::vector<std::string> members;
  bool created = false;  ///< true when this call made the cgroup
};

/// For the sandbox whose state dir is `dir`: the cgroups that freeze all of it.
/// Makes (and records in state.json, under the sandbox's lock) the lazy
/// freezer cgroup when the sandbox has none, then gathers its processes into
/// it. Returns nullopt when the sandbox is not running. Throws sbx::Error when
/// the host has no freezer at all (legacy without the freezer controller),
/// the sandbox has no cgroup that lists its processes, or a cgroup write
/// fails (naming the file and errno).
std::optional<SandboxFreezer> sandbox_freezer(const std::string& dir);

/// Moves every process listed in the `members` cgroups' cgroup.procs but not
/// in `into`'s into `into`, repeating until a pass finds none outside (or
/// `max_passes` passes). Returns how many processes it moved (0: all were
/// inside already). A process that exits meanwhile is skipped. Throws
/// sbx::Error when a write fails or the sandbox forks faster than it can be
/// gathered (still some outside after `max_passes`).
size_t gather_processes(const std::string& into, const std::vector<std::string>& members, int max_passes = 1000);

}  // namespace sbx::runtime
