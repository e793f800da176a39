#include "runtime/linux/time_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/log.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

namespace sbx::runtime {

namespace {

/// "CLOCK SECS NSECS": the offset that brings `clock` to zero now. The
/// kernel wants 0 <= NSECS < 1e9 and refuses an offset that would make the
/// clock negative when it is written; the clock is read before the write,
/// so it reads a few microseconds (the time in between) in the namespace.
std::string zero_offset(clockid_t clock, const char* name) {
  struct timespec now {};
  if (::clock_gettime(clock, &now) < 0) throw_errno(std::string("read the host's ") + name + " clock");
  long long secs = -static_cast<long long>(now.tv_sec);
  long nsecs = 0;
  if (now.tv_nsec > 0) {
    secs -= 1;
    nsecs = 1000000000L - now.tv_nsec;
  }
  return std::string(name) + " " + std::to_string(secs) + " " + std::to_string(nsecs) + "\n";
}

void write_offsets() {
  int fd = ::open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open /proc/self/timens_offsets");
  std::string text = zero_offset(CLOCK_MONOTONIC, "monotonic") + zero_offset(CLOCK_BOOTTIME, "boottime");
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    throw_errno("set the time namespace's clock offsets (/proc/self/timens_offsets)", n < 0 ? e : EIO);
}

}  // namespace

bool wants_time_namespace(const SandboxSpec& spec) {
  auto it = spec.annotations.find(kTimeNamespaceAnnotation);
  return it != spec.annotations.end() && it->second == "true";
}

pid_t clone_in_new_time_namespace(const std::function<pid_t()>& clone) {
  int own = ::open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
  if (own < 0)
    throw_errno_hint("open /proc/self/ns/time", "this kernel has no time namespaces (Linux 5.6+, CONFIG_TIME_NS); "
                                                "create the sandbox without --timens");
  auto back = [own] {
    // Back to our own namespace: later children of ours keep the host's clocks.
    if (::setns(own, CLONE_NEWTIME) < 0)
      log::warn(std::string("return to sbx's own time namespace (setns): ") + std::strerror(errno));
    ::close(own);
  };
  if (::unshare(CLONE_NEWTIME) < 0) {
    int e = errno;
    ::close(own);
    throw_errno("make a time namespace (unshare CLONE_NEWTIME)", e);
  }
  pid_t pid;
  try {
    write_offsets();
    pid = clone();
  } catch (...) {
    back();
    throw;
  }
  if (pid == 0) {
    ::close(own);  // the child: stays in the new namespace
    return 0;
  }
  back();
  return pid;
}

}  // namespace sbx::runtime
