// An owned file descriptor: closed when the owner goes out of scope, so that
// every error path (sbx::Error is thrown freely) closes what it opened.
#pragma once
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "common/error.h"

namespace sbx {

/// Owns `fd` (-1: none). Move-only; close(2) errors are ignored, as nothing
/// written through a descriptor that sbx closes this way needs them.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) noexcept : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  /// Closes the descriptor now (if any).
  void reset() noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  /// Gives up ownership: returns the descriptor, which the caller must close.
  int release() noexcept { return std::exchange(fd, -1); }
};

/// A pipe(2) with both ends owned and O_CLOEXEC (a child gets an end only
/// through dup2). `what` names its use in the error: throws sbx::Error.
struct Pipe {
  Fd r, w;
  explicit Pipe(const std::string& what = "a pipe") {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("create " + what);
    r = Fd(p[0]);
    w = Fd(p[1]);
  }
};

/// Closes every descriptor from `from` up except those in `keep` (entries
/// below `from` or -1 are ignored), with close_range(2): what a child of a
/// multithreaded sbx does so that no other sandbox's channel or client socket
/// lives on in it. No throw (a kernel without close_range leaves them open).
inline void close_fds_except(int from, std::vector<int> keep) noexcept {
  std::sort(keep.begin(), keep.end());
  unsigned next = static_cast<unsigned>(from);
  for (int k : keep) {
    if (k < from || static_cast<unsigned>(k) < next) continue;
    if (static_cast<unsigned>(k) > next) ::syscall(SYS_close_range, next, static_cast<unsigned>(k) - 1, 0U);
    next = static_cast<unsigned>(k) + 1;
  }
  ::syscall(SYS_close_range, next, ~0U, 0U);
}

}  // namespace sbx
