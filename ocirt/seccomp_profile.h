// A config.json linux.seccomp profile, loaded with libseccomp as runc does
// (libcontainer/seccomp/seccomp_linux.go): the default action, the listed
// architectures, one rule per syscall name (arguments on distinct indices are
// ANDed in one rule; several on the same index become one rule each, i.e.
// ORed). Names libseccomp does not know on this kernel are skipped, as runc
// does. libseccomp's own no_new_privs is off: the profile is loaded while the
// process still has CAP_SYS_ADMIN when process.noNewPrivileges is false.
// Kernel doc: userspace-api/seccomp_filter.rst.
#pragma once
#include "ocirt/config.h"

namespace sbx::ocirt {

/// Checks `profile` (actions, operators, architectures, flags) without loading
/// it, so that create fails early naming the field. Throws sbx::Error.
void check_seccomp(const Seccomp& profile);

/// Builds and loads `profile` into the calling thread. Throws sbx::Error
/// naming the field or syscall that failed.
void load_seccomp(const Seccomp& profile);

}  // namespace sbx::ocirt
