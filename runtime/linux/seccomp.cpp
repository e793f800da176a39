#include "runtime/linux/seccomp.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <seccomp.h>

#include <algorithm>
#include <atomic>
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

namespace {

/// The default profile as libseccomp builds it (rules only; not loaded).
/// The caller owns the context (seccomp_release).
scmp_filter_ctx build_default_filter() {
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
  return ctx;
}

/// The compiled program: classic BPF instructions, as the kernel takes them.
struct Program {
  std::vector<sock_filter> insns;
};

/// Compiles the default profile with libseccomp (seccomp_export_bpf writes
/// the very program seccomp_load would load) through a pipe (832 bytes on
/// x86-64, far below a pipe's capacity). Throws sbx::Error.
const Program* compile_default_filter() {
  scmp_filter_ctx ctx = build_default_filter();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) {
    int e = errno;
    seccomp_release(ctx);
    throw_errno("seccomp: create a pipe for the compiled filter", e);
  }
  int rc = seccomp_export_bpf(ctx, p[1]);
  seccomp_release(ctx);
  ::close(p[1]);
  auto* prog = new Program;
  if (rc == 0) {
    std::string bytes;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) bytes.append(buf, static_cast<size_t>(n));
    prog->insns.resize(bytes.size() / sizeof(sock_filter));
    std::copy_n(bytes.data(), prog->insns.size() * sizeof(sock_filter), reinterpret_cast<char*>(prog->insns.data()));
  }
  ::close(p[0]);
  if (rc < 0 || prog->insns.empty()) {
    delete prog;
    throw_errno("seccomp: compile the default filter", rc < 0 ? -rc : EINVAL);
  }
  return prog;
}

/// One program per process, published without a lock: a sandbox's process
/// made by a raw clone(2) of a multithreaded sbx must never wait for a lock
/// another thread held at the clone (a C++ static's guard is one). Two
/// threads racing both compile; one copy is kept, the other freed.
std::atomic<const Program*> g_program{nullptr};

const Program& default_program() {
  if (const Program* p = g_program.load(std::memory_order_acquire)) return *p;
  const Program* mine = compile_default_filter();
  const Program* expected = nullptr;
  if (!g_program.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
    delete mine;
    return *expected;
  }
  return *mine;
}

}  // namespace

void prepare_default_seccomp() { (void)default_program(); }

void install_default_seccomp() {
  const Program& prog = default_program();
  // As seccomp_load does with libseccomp's default attributes
  // (SCMP_FLTATR_CTL_NNP on, no TSYNC/LOG flags): no_new_privs first, then
  // the filter for this thread.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) throw_errno("seccomp: set no_new_privs");
  sock_fprog fprog{static_cast<unsigned short>(prog.insns.size()), const_cast<sock_filter*>(prog.insns.data())};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0) throw_errno("seccomp: load the filter");
}

std::vector<uint8_t> default_seccomp_bpf() {
  const Program& prog = default_program();
  const auto* b = reinterpret_cast<const uint8_t*>(prog.insns.data());
  return {b, b + prog.insns.size() * sizeof(sock_filter)};
}

}  // namespace sbx::runtime
