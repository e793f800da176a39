// STATE_DIR/log of a long-lived sandbox: the first process's stdout/stderr,
// bounded as log + log.1 (each at most kLogRotateBytes; at the limit log
// becomes log.1 and a new log starts). Written by the native holder
// (runtime/native/holder.cpp, inside the sandbox, through a dir fd) and the gVisor
// monitor (runtime/gvisor/gvisor_lifecycle.cpp); read by `sbx logs`.
// Async-signal-safe enough for the holder: no allocation, no throw.
#pragma once
#include <sys/types.h>

#include <cstdint>

namespace sbx::runtime {

/// Size at which STATE_DIR/log is rotated to log.1 (bytes).
inline constexpr int64_t kLogRotateBytes = 512 * 1024;

class SandboxLog {
 public:
  /// `state_dirfd`: the sandbox's state dir (not owned; must stay open).
  explicit SandboxLog(int state_dirfd) noexcept : dirfd_(state_dirfd) {}
  ~SandboxLog();
  SandboxLog(const SandboxLog&) = delete;
  SandboxLog& operator=(const SandboxLog&) = delete;

  /// Opens (creates, appends to) STATE_DIR/log. On failure the log stays
  /// closed and writes are dropped: losing output must not end a sandbox.
  void open() noexcept;
  /// Appends `n` bytes, rotating first when they would pass the limit.
  void write(const char* p, size_t n) noexcept;
  /// Copies what the non-blocking `fd` holds now into the log. Returns
  /// false at EOF or a read error (the caller then closes `fd`), true when
  /// `fd` has nothing more for now (EAGAIN).
  bool pump_from(int fd) noexcept;

 private:
  int dirfd_;
  int fd_ = -1;
  int64_t size_ = 0;  ///< bytes in the current log (bytes)
};

}  // namespace sbx::runtime
