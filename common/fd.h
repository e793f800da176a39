// An owned file descriptor: closed when the owner goes out of scope, so that
// every error path (sbx::Error is thrown freely) closes what it opened.
#pragma once
#include <unistd.h>

#include <utility>

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

}  // namespace sbx
