#include "runtime/sandbox_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>  // renameat

namespace sbx::runtime {

SandboxLog::~SandboxLog() {
  if (fd_ >= 0) ::close(fd_);
}

void SandboxLog::open() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::openat(dirfd_, "log", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  struct stat st;
  size_ = (fd_ >= 0 && ::fstat(fd_, &st) == 0) ? st.st_size : 0;
}

void SandboxLog::write(const char* p, size_t n) noexcept {
  if (fd_ < 0) return;
  if (size_ + static_cast<int64_t>(n) > kLogRotateBytes) {
    ::close(fd_);
    fd_ = -1;
    ::renameat(dirfd_, "log", dirfd_, "log.1");
    open();
    if (fd_ < 0) return;
  }
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
    size_ += w;
  }
}

bool SandboxLog::pump_from(int fd) noexcept {
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      write(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

}  // namespace sbx::runtime
