// Small file-system helpers shared by every module: whole-file reads, atomic
// writes (temp file + fsync + rename), directory creation and flock(2) locks.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace sbx::fs {

/// Reads a whole file. Throws sbx::Error naming the path on failure.
std::string read_file(const std::string& path);

/// The last `max` bytes of the file at `path` (all of it when shorter),
/// read from its end: a long log is not read whole. "" when the file cannot
/// be opened or read. No throw (for error messages that quote a log).
std::string read_tail(const std::string& path, size_t max) noexcept;

/// Reads `fd` (not closed here) to its end, handing each chunk (up to 64 KiB)
/// to `sink` as it comes. Throws sbx::Error "read PATH" with errno on failure
/// (`path` names the file in the message only).
void read_fd(int fd, const std::string& path, const std::function<void(std::string_view)>& sink);

/// Writes all of `data` to `fd` (retrying short writes and EINTR). Throws
/// sbx::Error "write PATH: <errno>" (`path` names the file in the message).
void write_all(int fd, std::string_view data, const std::string& path);

/// Writes `data` to `path` atomically: a temp file in the same directory,
/// fsync, rename(2) over the target. Readers see the old or the new file, never
/// a half-written one. `mode` is the new file's permission bits.
void write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0644);

/// Writes `data` to an existing file (e.g. a cgroup or /proc knob) with one
/// write(2). Throws sbx::Error naming the path and errno.
void write_existing(const std::string& path, std::string_view data);

/// Like write_existing but returns the errno (0 on success) instead of throwing.
int try_write_existing(const std::string& path, std::string_view data);

/// mkdir -p with `mode` for the directories it creates.
void mkdir_p(const std::string& path, unsigned mode = 0755);

/// True when the path exists (lstat: a dangling symlink exists).
bool exists(const std::string& path);

/// An exclusive or shared flock(2) on a lock file, released on destruction.
class FileLock {
 public:
  enum Mode { Shared, Exclusive };
  /// Opens (creating) `path` and blocks until the lock is held.
  FileLock(const std::string& path, Mode mode = Exclusive);
  /// Tries once; `held()` says whether it got the lock.
  static FileLock try_lock(const std::string& path, Mode mode = Exclusive);
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();
  bool held() const { return fd_ >= 0; }
  void release();

 private:
  FileLock() = default;
  int fd_ = -1;
};

}  // namespace sbx::fs
