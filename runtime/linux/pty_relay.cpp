#include "runtime/linux/pty_relay.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

namespace sbx::runtime {

namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

PtyRelay::PtyRelay(int master, int in_fd, int out_fd) noexcept : master_(master), in_(in_fd), out_(out_fd) {
  if (::isatty(in_) && ::tcgetattr(in_, &saved_) == 0) {
    struct termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(in_, TCSANOW, &raw) == 0) raw_fd_ = in_;
  }
  resize();
}

void PtyRelay::restore() noexcept {
  if (raw_fd_ >= 0) {
    ::tcsetattr(raw_fd_, TCSANOW, &saved_);
    raw_fd_ = -1;
  }
}

void PtyRelay::resize() noexcept {
  struct winsize ws {};
  if (::ioctl(in_, TIOCGWINSZ, &ws) == 0) ::ioctl(master_, TIOCSWINSZ, &ws);
}

int PtyRelay::add_pollfds(struct pollfd* fds, int n, bool forward_input) noexcept {
  i_master_ = i_input_ = -1;
  if (master_open_) {
    i_master_ = n;
    fds[n++] = {master_, POLLIN, 0};
  }
  if (input_open_ && forward_input) {
    i_input_ = n;
    fds[n++] = {in_, POLLIN, 0};
  }
  return n;
}

void PtyRelay::handle(const struct pollfd* fds) noexcept {
  char buf[16384];
  if (i_master_ >= 0 && (fds[i_master_].revents & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t got = ::read(master_, buf, sizeof buf);
    if (got > 0)
      write_all(out_, buf, static_cast<size_t>(got));
    else if (got == 0 || (errno != EINTR && errno != EAGAIN))
      master_open_ = false;  // EIO: every slave end is closed
  }
  if (i_input_ >= 0 && (fds[i_input_].revents & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t got = ::read(in_, buf, sizeof buf);
    if (got > 0) {
      write_all(master_, buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      input_open_ = false;
      char eof = 4;  // ^D: end of input for the program on the pty
      struct termios t {};
      if (::tcgetattr(master_, &t) == 0) eof = static_cast<char>(t.c_cc[VEOF]);
      write_all(master_, &eof, 1);
    }
  }
}

}  // namespace sbx::runtime
