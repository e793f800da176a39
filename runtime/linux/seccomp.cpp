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
#include <cctype>
#include <memory>
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

uint32_t action_of(const std::string& a, std::optional<unsigned> errno_ret, const std::string& field) {
  if (a == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (a == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(errno_ret.value_or(EPERM));
  if (a == "SCMP_ACT_KILL" || a == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
  if (a == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (a == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (a == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(errno_ret.value_or(EPERM));
  if (a == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  throw Error(field + ": action '" + a + "' is not a seccomp action sbx knows");
}

scmp_compare op_of(const std::string& op) {
  if (op == "SCMP_CMP_NE") return SCMP_CMP_NE;
  if (op == "SCMP_CMP_LT") return SCMP_CMP_LT;
  if (op == "SCMP_CMP_LE") return SCMP_CMP_LE;
  if (op == "SCMP_CMP_EQ") return SCMP_CMP_EQ;
  if (op == "SCMP_CMP_GE") return SCMP_CMP_GE;
  if (op == "SCMP_CMP_GT") return SCMP_CMP_GT;
  if (op == "SCMP_CMP_MASKED_EQ") return SCMP_CMP_MASKED_EQ;
  throw Error("linux.seccomp.syscalls.args.op: '" + op + "' is not a seccomp operator");
}

uint32_t arch_of(const std::string& a) {
  std::string n = a.rfind("SCMP_ARCH_", 0) == 0 ? a.substr(10) : a;
  for (auto& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  uint32_t v = seccomp_arch_resolve_name(n.c_str());
  if (v == 0) throw Error("linux.seccomp.architectures: '" + a + "' is not known to libseccomp");
  return v;
}

scmp_arg_cmp cond_of(const spec::SeccompArg& a) {
  if (a.index > 5) throw Error("linux.seccomp.syscalls.args.index: " + std::to_string(a.index) + " is not 0..5");
  scmp_arg_cmp c{};
  c.arg = a.index;
  c.op = op_of(a.op);
  c.datum_a = a.value;
  c.datum_b = a.value_two;
  return c;
}

/// Builds `p` with libseccomp (rules only; not loaded), as runc does
/// (libcontainer/seccomp/seccomp_linux.go): one rule per system call name;
/// arguments on distinct indices are ANDed in one rule, several on the same
/// index become one rule each (ORed). Names libseccomp does not know on this
/// architecture are skipped. libseccomp's own no_new_privs is off: the
/// caller decides. The caller owns the context (seccomp_release).
scmp_filter_ctx build_filter(const spec::SeccompProfile& p) {
  check_seccomp_profile(p);
  uint32_t def = action_of(p.default_action, p.default_errno_ret, "linux.seccomp.defaultAction");
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(def), seccomp_release);
  if (!ctx) throw Error("seccomp_init failed for the default action " + p.default_action);
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  for (const auto& f : p.flags) {
    if (f == "SECCOMP_FILTER_FLAG_LOG") seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_LOG, 1);
    if (f == "SECCOMP_FILTER_FLAG_SPEC_ALLOW") seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_SSB, 1);
  }
  for (const auto& a : p.architectures) {
    int rc = seccomp_arch_add(ctx.get(), arch_of(a));
    if (rc < 0 && rc != -EEXIST) throw_errno("seccomp: add architecture " + a, -rc);
  }
  for (const auto& r : p.syscalls) {
    uint32_t act = action_of(r.action, r.errno_ret, "linux.seccomp.syscalls.action");
    if (act == def) continue;  // libseccomp refuses a rule that repeats the default
    std::vector<scmp_arg_cmp> conds;
    bool same_index = false;
    for (const auto& a : r.args) {
      for (const auto& c : conds) same_index |= (c.arg == a.index);
      conds.push_back(cond_of(a));
    }
    for (const auto& name : r.names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture / unknown to libseccomp
      auto add = [&](const std::vector<scmp_arg_cmp>& cs) {
        int rc = seccomp_rule_add_array(ctx.get(), act, nr, static_cast<unsigned>(cs.size()), cs.empty() ? nullptr : cs.data());
        if (rc < 0) throw_errno("seccomp: add the rule for " + name, -rc);
      };
      if (!same_index) {
        add(conds);
      } else {
        for (const auto& c : conds) add({c});
      }
    }
  }
  return ctx.release();
}

}  // namespace

void check_seccomp_profile(const spec::SeccompProfile& p) {
  action_of(p.default_action, p.default_errno_ret, "linux.seccomp.defaultAction");
  for (const auto& a : p.architectures) arch_of(a);
  for (const auto& f : p.flags)
    if (f != "SECCOMP_FILTER_FLAG_TSYNC" && f != "SECCOMP_FILTER_FLAG_LOG" && f != "SECCOMP_FILTER_FLAG_SPEC_ALLOW")
      throw Error("linux.seccomp.flags: '" + f + "' is not a flag sbx knows");
  for (const auto& r : p.syscalls) {
    action_of(r.action, r.errno_ret, "linux.seccomp.syscalls.action");
    for (const auto& a : r.args) cond_of(a);
  }
}

const spec::SeccompProfile& default_seccomp_profile() {
  static const spec::SeccompProfile p = [] {
    spec::SeccompProfile d;
    d.default_action = "SCMP_ACT_ALLOW";
    d.syscalls.push_back({seccomp_denied_syscalls(), "SCMP_ACT_ERRNO", EPERM, {}});
    // clone(2) may not create namespaces (x86-64: the flags are argument 0);
    // one rule per flag bit, since rules for one system call are OR-ed.
    const uint64_t ns_flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                              CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME;
    for (uint64_t bit = 1; bit; bit <<= 1)
      if (ns_flags & bit) d.syscalls.push_back({{"clone"}, "SCMP_ACT_ERRNO", EPERM, {{0, bit, bit, "SCMP_CMP_MASKED_EQ"}}});
    d.syscalls.push_back({{"clone3"}, "SCMP_ACT_ERRNO", ENOSYS, {}});
    // No vsock: a VM's host listens there, beside the sandbox's --network
    // (docker's default profile allows socket(2) for every family but AF_VSOCK).
    d.syscalls.push_back({{"socket"}, "SCMP_ACT_ERRNO", EPERM, {{0, AF_VSOCK, 0, "SCMP_CMP_EQ"}}});
    return d;
  }();
  return p;
}

void load_seccomp_profile(const spec::SeccompProfile& p) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(build_filter(p), seccomp_release);
  int rc = seccomp_load(ctx.get());
  if (rc < 0) throw_errno("seccomp: load the linux.seccomp profile", -rc);
}

namespace {

/// The compiled program: classic BPF instructions, as the kernel takes them.
struct Program {
  std::vector<sock_filter> insns;
};

/// Compiles the default profile with libseccomp (seccomp_export_bpf writes
/// the very program seccomp_load would load) through a pipe (832 bytes on
/// x86-64, far below a pipe's capacity). Throws sbx::Error.
const Program* compile_default_filter() {
  scmp_filter_ctx ctx = build_filter(default_seccomp_profile());
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
