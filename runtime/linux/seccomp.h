// The default seccomp profile (libseccomp): the equivalent of docker's and
// podman's default — everything a normal program needs is allowed; system
// calls that reach into the kernel or the host beyond the sandbox fail with
// EPERM (module loading, mount, ptrace, keyrings, bpf, userfaultfd,
// perf_event_open, reboot, kexec, new namespaces, clock setting, swap, …).
// Installed last, right before execve. Kernel doc: userspace-api/seccomp_filter.rst.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/seccomp_profile.h"

namespace sbx::runtime {

/// Checks `profile` (actions, operators, architectures, flags) without
/// building it, so that a bad profile fails before any process is made.
/// Throws sbx::Error naming the field.
void check_seccomp_profile(const spec::SeccompProfile& profile);

/// Builds `profile` (libseccomp, as runc builds linux.seccomp) and loads it
/// into the calling thread. libseccomp's no_new_privs is off: set it first,
/// or hold CAP_SYS_ADMIN. Throws sbx::Error naming the field or system call.
void load_seccomp_profile(const spec::SeccompProfile& profile);

/// sbx's default profile, written as a runtime-spec profile (what
/// install_default_seccomp compiles): allow by default; the system calls of
/// seccomp_denied_syscalls() fail with EPERM, clone(2) with namespace
/// flags EPERM, clone3(2) ENOSYS, socket(AF_VSOCK) EPERM.
const spec::SeccompProfile& default_seccomp_profile();

/// Names of the system calls the default profile denies with EPERM.
const std::vector<std::string>& seccomp_denied_syscalls();

/// Loads the default profile into the calling thread (needs no_new_privs or
/// CAP_SYS_ADMIN). clone(2) with namespace flags fails with EPERM; clone3(2)
/// fails with ENOSYS so that libc falls back to clone(2), whose flags a
/// filter can inspect (as docker does). Other architectures' system calls
/// (i386, x32) kill the process. socket(AF_VSOCK, …) fails with EPERM (as
/// docker's profile: these hosts may be VMs whose hypervisor listens on
/// vsock, outside --network none). Throws sbx::Error.
/// Loads the program prepare_default_seccomp() compiled (compiling it first
/// if nothing did): a precompiled program spares the sandbox's last step
/// before execve libseccomp's ~0.2 ms of rule building and kernel probing.
void install_default_seccomp();

/// Compiles the default profile to its BPF program (libseccomp,
/// seccomp_export_bpf) once per process, without loading it; later
/// install_default_seccomp() calls, also in forks and clones of this process,
/// only load it. Call it where the time is otherwise idle: the sandbox's
/// init does while it waits for sbx to write its id maps. Lock-free (safe in
/// a clone of a multithreaded process). Throws sbx::Error.
void prepare_default_seccomp();

/// The compiled default program (struct sock_filter array, host byte order),
/// for tests: it must equal what libseccomp exports for the same rules.
std::vector<uint8_t> default_seccomp_bpf();

}  // namespace sbx::runtime
