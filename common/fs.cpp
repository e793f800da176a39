#include "common/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "common/error.h"
#include "common/fd.h"

namespace sbx::fs {

void read_fd(int fd, const std::string& path, const std::function<void(std::string_view)>& sink) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      throw_errno("read " + path, e);
    }
    if (n == 0) break;
    sink(std::string_view(buf, static_cast<size_t>(n)));
  }
}

std::string read_file(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) throw_errno("read " + path);
  std::string out;
  read_fd(f.fd, path, [&out](std::string_view chunk) { out.append(chunk); });
  return out;
}

std::string read_tail(const std::string& path, size_t max) noexcept {
  try {
    Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (f.fd < 0) return "";
    struct stat st {};
    if (::fstat(f.fd, &st) < 0) return "";
    // A regular file: start `max` bytes before its end. Anything else (a
    // pipe, a /proc file with size 0) is read through, keeping the last `max`.
    if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<uint64_t>(st.st_size) > max &&
        ::lseek(f.fd, st.st_size - static_cast<off_t>(max), SEEK_SET) < 0)
      return "";
    std::string out;
    read_fd(f.fd, path, [&out, max](std::string_view chunk) {
      out.append(chunk);
      if (out.size() > 2 * max + 65536) out.erase(0, out.size() - max);
    });
    return out.size() > max ? out.substr(out.size() - max) : out;
  } catch (const std::exception&) {
    return "";
  }
}

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write " + path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw_errno("create " + tmp);
  try {
    write_all(fd, data, tmp);
    if (::fsync(fd) < 0) throw_errno("fsync " + tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) < 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_errno("rename " + tmp + " to " + path, e);
  }
}

int try_write_existing(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = n < 0 ? errno : 0;
  ::close(fd);
  return e;
}

void write_existing(const std::string& path, std::string_view data) {
  int e = try_write_existing(path, data);
  if (e) throw_errno("write '" + std::string(data) + "' to " + path, e);
}

void mkdir_p(const std::string& path, unsigned mode) {
  if (path.empty()) return;
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    cur = path.substr(0, j);
    if (!cur.empty() && ::mkdir(cur.c_str(), mode) < 0 && errno != EEXIST) {
      throw_errno("create directory " + cur);
    }
    i = j + 1;
  }
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

FileLock::FileLock(const std::string& path, Mode mode) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw_errno("open lock " + path);
  while (::flock(fd_, mode == Exclusive ? LOCK_EX : LOCK_SH) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw_errno("lock " + path, e);
  }
}

FileLock FileLock::try_lock(const std::string& path, Mode mode) {
  FileLock l;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("open lock " + path);
  if (::flock(fd, (mode == Exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
    ::close(fd);
    return l;
  }
  l.fd_ = fd;
  return l;
}

FileLock::FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}
FileLock::~FileLock() { release(); }
void FileLock::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace sbx::fs
