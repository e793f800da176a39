// The identity and privileges of a sandbox's process, set just before it
// execs its command: shared by the first process (runtime/native/native_backend.cpp)
// and `sbx exec` (runtime/native/exec.cpp), so that both get the same order.
#pragma once
#include <sys/types.h>

#include <vector>

#include "spec/sandbox_spec.h"
#include "runtime/user.h"

namespace sbx::runtime {

/// In the calling process (in the sandbox, about to exec), in the order runc
/// uses (libcontainer/standard_init_linux.go, init_linux.go finalizeNamespace):
/// `p.rlimits`; the capability bounding set down to `caps` (dropping needs
/// CAP_SETPCAP, which setuid may take away); supplementary `groups`, then
/// `user`'s gid and uid (setgroups/setresgid/setresuid); the default seccomp
/// filter unless `p.no_new_privileges` (then it comes with no_new_privs at
/// exec: runtime/native/child_channel.h exec_command), after setuid/capset as it may deny
/// them; last the effective/permitted/inheritable/ambient sets to `caps`.
/// Throws sbx::Error naming the step and errno.
void apply_credentials(const Process& p, const ResolvedUser& user, const std::vector<gid_t>& groups,
                       const std::vector<int>& caps);

}  // namespace sbx::runtime
