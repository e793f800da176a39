#include "runtime/linux/namespaces.h"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"

namespace sbx::runtime {

namespace {
// struct clone_args of linux/sched.h (v2 layout), declared here because the
// kernel header clashes with glibc's <sched.h>.
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;
  uint64_t set_tid_size;
  uint64_t cgroup;
};
}  // namespace

uint64_t clone_namespace_flags(const SandboxSpec& spec) {
  uint64_t f = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  if (spec.network != NetworkMode::Host) f |= CLONE_NEWNET;
  return f;
}

pid_t clone_sandbox(uint64_t flags, int* pidfd) {
  CloneArgs args{};
  int fd = -1;
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&fd);
  // With CLONE_PARENT (runtime/linux/clone_child.h) clone3 wants 0: the
  // child takes the calling process's own exit signal (SIGCHLD).
  args.exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD;
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) throw_errno_hint("clone3 into new namespaces", "sbx needs root (CAP_SYS_ADMIN) and namespace support");
  if (pid > 0) *pidfd = fd;
  return static_cast<pid_t>(pid);
}

void enter_cgroup_namespace() {
  if (::unshare(CLONE_NEWCGROUP) < 0) throw_errno("unshare the cgroup namespace");
}

}  // namespace sbx::runtime
