#include "runtime/linux/seccomp.h"

#include <sched.h>
#include <sys/socket.h>
#include <seccomp.h>

#include <cerrno>

#include "common/error.h"

namespace sbx::runtime {

const std::vector<std::string>& seccomp_denied_syscalls() {
  static const std::vector<std::string> v = {
      // kernel modules, kexec, reboot
      "init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms", "query_module",
      "kexec_load", "kexec_file_load", "reboot",
      // mounts and the root
      "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
      "fspick", "mount_setattr",
      // namespaces
      "unshare", "setns",
      // tracing and other processes' memory
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
      // keyrings
      "keyctl", "add_key", "request_key",
      // bpf, perf, userfaultfd, io_uring
      "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
      // handles to files outside the sandbox
      "open_by_handle_at", "name_to_handle_at",
      // swap, accounting, quotas, sysfs/sysctl, kernel log
      "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "nfsservctl", "_sysctl", "sysfs", "syslog",
      "ustat", "uselib", "vhangup", "lookup_dcookie",
      // clocks
      "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
      // raw I/O ports and NUMA policy of the host
      "iopl", "ioperm", "vm86", "vm86old", "mbind", "set_mempolicy", "move_pages", "migrate_pages",
      // fanotify and the kernel's own handles
      "fanotify_init", "pidfd_getfd"};
  return v;
}

void install_default_seccomp() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) throw Error("seccomp_init failed");
  auto fail = [&](const std::string& what, int rc) {
    seccomp_release(ctx);
    throw_errno("seccomp: " + what, -rc);
  };
  int rc;
  for (const auto& name : seccomp_denied_syscalls()) {
    int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0) fail("deny " + name, rc);
  }
  const uint64_t ns_flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                            CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME;
  // clone(2) may not create namespaces (x86-64: the flags are argument 0);
  // one rule per flag bit, since rules for one system call are OR-ed.
  for (uint64_t bit = 1; bit; bit <<= 1) {
    if (!(ns_flags & bit)) continue;
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                               SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit))) < 0)
      fail("clone rule", rc);
  }
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0) fail("clone3 rule", rc);
  // No vsock: a VM's host listens there, beside the sandbox's --network
  // (docker's default profile allows socket(2) for every family but AF_VSOCK).
  if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                             SCMP_A0(SCMP_CMP_EQ, AF_VSOCK))) < 0)
    fail("socket(AF_VSOCK) rule", rc);
  if ((rc = seccomp_load(ctx)) < 0) fail("load the filter", rc);
  seccomp_release(ctx);
}

}  // namespace sbx::runtime
