// Time namespaces (time_namespaces(7)): a sandbox whose CLOCK_MONOTONIC and
// CLOCK_BOOTTIME (and so /proc/uptime) start near zero when it starts, the
// same on every host and in every replay of a recorded sandbox. The wall
// clock (CLOCK_REALTIME) cannot be namespaced and stays the host's.
//
// A time namespace's clock offsets can be set only before the first process
// enters it, so it is not made by the clone that starts the sandbox (the
// child would be inside, with zero offsets, at once): the process that makes
// the clone first unshares CLONE_NEWTIME (which moves only its future
// children), writes /proc/self/timens_offsets, clones the sandbox's init
// into it, and then returns to its own time namespace (setns), so that its
// later children keep the host's clocks.
#pragma once
#include <sys/types.h>

#include <functional>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// The spec annotation that asks for a time namespace: "true" (set by
/// `sbx create --timens`, and by default for recorded sandboxes); "false" or
/// absent: the host's clocks. An annotation, as `dev.sbx.gvisor.nvproxy`, so
/// that it travels in the spec (config.json, a trajectory's header) as it is.
constexpr const char* kTimeNamespaceAnnotation = "dev.sbx.timens";

/// True when `spec` asks for a time namespace (kTimeNamespaceAnnotation "true").
bool wants_time_namespace(const SandboxSpec& spec);

/// Runs `clone` (a fork-like clone: 0 in the child, the child's pid in the
/// parent) so that the child starts in a new time namespace whose
/// CLOCK_MONOTONIC and CLOCK_BOOTTIME read 0 at that moment. The caller must
/// have no other thread (setns into a time namespace needs it: see
/// runtime/linux/clone_child.h); afterwards the caller is back in its own
/// time namespace. Returns what `clone` returns. Throws sbx::Error when the
/// kernel has no time namespaces (Linux < 5.6, CONFIG_TIME_NS off) or the
/// offsets cannot be written, and what `clone` throws.
pid_t clone_in_new_time_namespace(const std::function<pid_t()>& clone);

}  // namespace sbx::runtime
