// The default seccomp profile (libseccomp): the equivalent of docker's and
// podman's default — everything a normal program needs is allowed; system
// calls that reach into the kernel or the host beyond the sandbox fail with
// EPERM (module loading, mount, ptrace, keyrings, bpf, userfaultfd,
// perf_event_open, reboot, kexec, new namespaces, clock setting, swap, …).
// Installed last, right before execve. Kernel doc: userspace-api/seccomp_filter.rst.
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// Names of the system calls the default profile denies with EPERM.
const std::vector<std::string>& seccomp_denied_syscalls();

/// Loads the default profile into the calling thread (needs no_new_privs or
/// CAP_SYS_ADMIN). clone(2) with namespace flags fails with EPERM; clone3(2)
/// fails with ENOSYS so that libc falls back to clone(2), whose flags a
/// filter can inspect (as docker does). Other architectures' system calls
/// (i386, x32) kill the process. socket(AF_VSOCK, …) fails with EPERM (as
/// docker's profile: these hosts may be VMs whose hypervisor listens on
/// vsock, outside --network none). Throws sbx::Error.
void install_default_seccomp();

}  // namespace sbx::runtime
