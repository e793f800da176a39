#include "runtime/linux/console_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace sbx::runtime {

ConsoleSocket::ConsoleSocket(std::string path) : path_(std::move(path)) {
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (path_.empty() || path_.size() >= sizeof addr.sun_path)
    throw Error(ErrorKind::InvalidArgument, "console socket path " + path_ + " is " + std::to_string(path_.size()) +
                " bytes; an AF_UNIX socket path must be under " + std::to_string(sizeof addr.sun_path) +
                " bytes: use a shorter --run-root");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw_errno("create the console socket for " + path_);
  // A socket file left by a killed earlier run with the same path would make
  // bind fail with EADDRINUSE; only a socket is ever removed.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path_.c_str());
  if (::bind(fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) < 0) {
    int e = errno;
    ::close(std::exchange(fd_, -1));
    throw_errno("bind the console socket " + path_, e);
  }
  if (::listen(fd_, 1) < 0) {
    int e = errno;
    close();
    throw_errno("listen on the console socket " + path_, e);
  }
}

ConsoleSocket::ConsoleSocket(ConsoleSocket&& o) noexcept
    : path_(std::exchange(o.path_, {})), fd_(std::exchange(o.fd_, -1)) {}

ConsoleSocket& ConsoleSocket::operator=(ConsoleSocket&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::exchange(o.path_, {});
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

ConsoleSocket::~ConsoleSocket() { close(); }

void ConsoleSocket::close() noexcept {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  ::unlink(path_.c_str());
}

namespace {

/// Reads one message from a connected console socket and returns the first
/// descriptor it carries (close-on-exec); closes any others. -1 on EOF.
int receive_fd(int conn, const std::string& path) {
  char data[256];  // runsc/runc send the pty's name or a tag; not needed
  struct iovec iov {data, sizeof data};
  alignas(struct cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl;
  msg.msg_controllen = sizeof ctl;
  ssize_t n;
  do n = ::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) throw_errno("receive the terminal from the console socket " + path);
  int master = -1;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (master < 0)
        master = fd;
      else
        ::close(fd);
    }
  }
  if (master < 0 && n > 0)
    throw Error("the console socket " + path + " received a message without a file descriptor (not an OCI console socket peer?)");
  return master;
}

}  // namespace

int ConsoleSocket::receive_master(int abort_fd, int timeout_ms) {
  if (fd_ < 0) throw Error("console socket " + path_ + " is closed");
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  auto left_ms = [&]() -> int {
    if (timeout_ms < 0) return -1;
    auto l = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return l < 0 ? 0 : static_cast<int>(l);
  };
  // Phase 1: the runtime connects; phase 2: it sends the master. The abort
  // fd is watched in both, so a runtime dying in between never blocks sbx.
  int conn = -1;
  for (;;) {
    struct pollfd fds[2] = {{conn < 0 ? fd_ : conn, POLLIN, 0}, {abort_fd, POLLIN, 0}};
    int r = ::poll(fds, abort_fd >= 0 ? 2 : 1, left_ms());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      if (conn >= 0) ::close(conn);
      throw_errno("wait on the console socket " + path_, e);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (conn < 0) {
        conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) {
          if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
          throw_errno("accept on the console socket " + path_);
        }
        continue;
      }
      int master;
      try {
        master = receive_fd(conn, path_);
      } catch (...) {
        ::close(conn);
        throw;
      }
      ::close(conn);
      if (master >= 0) return master;
      conn = -1;  // the peer hung up without sending: wait for another one
      continue;
    }
    if (r == 0 || (abort_fd >= 0 && fds[1].revents)) {
      if (conn >= 0) ::close(conn);
      return -1;
    }
  }
}

}  // namespace sbx::runtime
