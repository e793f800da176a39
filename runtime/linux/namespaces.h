// Linux namespaces of a sandbox (namespaces(7)): mount, pid, ipc, uts, net
// (unless --network host) and cgroup. All but the cgroup namespace are created
// by the one clone3(2) that starts the sandbox's init; the cgroup namespace is
// entered by the init after it has joined its cgroup, so that the sandbox
// sees its own cgroup as "/".
#pragma once
#include <sys/types.h>

#include <cstdint>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// CLONE_NEW* flags for the clone that starts the sandbox.
uint64_t clone_namespace_flags(const SandboxSpec& spec);

/// clone3(2) as a fork into new namespaces: returns the child's pid in the
/// parent (and its pidfd in *pidfd, CLONE_PIDFD), 0 in the child. The child
/// gets SIGCHLD as exit signal (also with CLONE_PARENT in `flags`, from the
/// caller's own). Throws sbx::Error in the parent.
pid_t clone_sandbox(uint64_t flags, int* pidfd);

/// Enters a new cgroup namespace rooted at the caller's current cgroup.
/// Throws sbx::Error.
void enter_cgroup_namespace();

}  // namespace sbx::runtime
