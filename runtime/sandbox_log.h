// STATE_DIR/ctr.log of a long-lived sandbox: the first process's stdout and
// stderr as records, bounded as ctr.log + ctr.log.1 (each at most
// kLogRotateBytes; at the limit ctr.log becomes ctr.log.1 and a new one
// starts). Written by the native holder (runtime/native/holder.cpp, inside
// the sandbox, through a dir fd) and the gVisor monitor
// (runtime/gvisor/gvisor_lifecycle.cpp); read by `sbx logs` and `sbx serve`
// (runtime/lifecycle.h read_log_records).
//
// One record per line, the CRI / podman "k8s-file" format
// (kubernetes/cri-api: pkg/apis/runtime/v1 "LogTag"):
//   <RFC 3339 UTC, 9 fraction digits> <stdout|stderr> <F|P> <text>\n
// F: <text> ends a line (the process wrote <text>\n); P: a partial line
// (the bytes that arrived without a newline), continued by the next record
// of the stream. Sandboxes from before this format wrote raw bytes to
// STATE_DIR/log (+ log.1); the reader still reads those, as stdout.
// The writer is async-signal-safe enough for the holder: no allocation, no
// throw, no locale or time-zone code (it may run after fork of a
// multi-threaded parent).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string_view>

namespace sbx::runtime {

/// Size at which STATE_DIR/ctr.log is rotated to ctr.log.1 (bytes).
inline constexpr int64_t kLogRotateBytes = 512 * 1024;
/// The record log and its rotated predecessor (names in the state dir).
inline constexpr const char* kRecordLog = "ctr.log";
inline constexpr const char* kRecordLogOld = "ctr.log.1";

/// Stream numbers, as Docker's multiplexed framing numbers them.
inline constexpr int kStdout = 1;
inline constexpr int kStderr = 2;

class SandboxLog {
 public:
  /// `state_dirfd`: the sandbox's state dir (not owned; must stay open).
  explicit SandboxLog(int state_dirfd) noexcept : dirfd_(state_dirfd) {}
  ~SandboxLog();
  SandboxLog(const SandboxLog&) = delete;
  SandboxLog& operator=(const SandboxLog&) = delete;

  /// Opens (creates, appends to) STATE_DIR/ctr.log. On failure the log stays
  /// closed and writes are dropped: losing output must not end a sandbox.
  void open() noexcept;
  /// Appends `n` bytes the process wrote to `stream` (kStdout, kStderr) as
  /// records stamped now: one F record per complete line, a P record for a
  /// trailing piece without a newline. Rotates first when a batch of records
  /// would pass the limit (a record is never split across files).
  void write(int stream, const char* p, size_t n) noexcept;
  /// Copies what the non-blocking `fd` (the process's `stream`) holds now
  /// into the log. Returns false at EOF or a read error (the caller then
  /// closes `fd`), true when `fd` has nothing more for now (EAGAIN).
  bool pump_from(int fd, int stream) noexcept;

 private:
  void flush(const char* p, size_t n) noexcept;
  int dirfd_;
  int fd_ = -1;
  int64_t size_ = 0;  ///< bytes in the current log (bytes)
};

/// One parsed record. `text` includes the newline of an F record, so the
/// concatenation of a stream's texts is exactly what the process wrote.
struct LogRecord {
  int stream = kStdout;  ///< kStdout or kStderr
  int64_t time_ns = 0;   ///< unix time in ns; 0: unknown (a raw legacy log)
  bool partial = false;  ///< a P record: no newline at its end
  std::string_view text;
};

/// Parses one line of ctr.log, `line_with_nl` including its terminating
/// '\n' (an F record's text keeps it; `out.text` points into the line).
/// False for a malformed line.
bool parse_log_record(std::string_view line_with_nl, LogRecord& out) noexcept;

/// Formats unix time `ns` as RFC 3339 UTC with 9 fraction digits
/// ("2024-01-02T03:04:05.123456789Z") into `out` (at least 31 bytes);
/// returns the length (30). No locale or time-zone code.
size_t format_rfc3339_ns(int64_t ns, char* out) noexcept;

/// Parses RFC 3339 ("…Z" or "…+hh:mm", fraction optional) or a Docker
/// `since`/`until` value (unix seconds with an optional fraction) into unix
/// ns. False when it is neither.
bool parse_time_ns(std::string_view s, int64_t& ns) noexcept;

}  // namespace sbx::runtime
