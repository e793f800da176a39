#include "server/create_child.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>

#include "common/error.h"
#include "common/fd.h"

namespace sbx::server {
namespace {

void write_all_or_stop(int fd, const std::string& s) {
  const char* d = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t k = ::write(fd, d, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    d += k;
    n -= static_cast<size_t>(k);
  }
}

}  // namespace

std::string create_in_child(engine::Engine& eng, const engine::SandboxRequest& req) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("create a pipe to create sandbox " + req.spec.id.substr(0, 12));
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(p[0]);
    ::close(p[1]);
    throw_errno("fork to create sandbox " + req.spec.id.substr(0, 12), e);
  }
  if (pid == 0) {
    // The answer: "0\n<id>" or "<exit code>\n<message>". Only the pipe and
    // the sandbox's stdin (req.stdin_fd) stay open: the server's listening
    // socket and client connections must not live on in the sandbox's holder.
    int w = p[1];
    close_fds_except(3, {w, req.stdin_fd});
    std::string out;
    try {
      out = "0\n" + eng.create(req);
    } catch (const Error& e) {
      out = std::to_string(e.exit_code() ? e.exit_code() : kExitSbxFailed) + "\n" + e.what();
    } catch (const std::exception& e) {
      out = std::to_string(kExitSbxFailed) + "\n" + e.what();
    }
    write_all_or_stop(w, out);
    ::_exit(0);
  }
  ::close(p[1]);
  std::string res;
  char buf[4096];
  for (;;) {
    ssize_t k = ::read(p[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    res.append(buf, static_cast<size_t>(k));
  }
  ::close(p[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  size_t nl = res.find('\n');
  if (nl == std::string::npos)
    throw Error("create sandbox " + req.spec.id.substr(0, 12) + ": its creating process ended (status " +
                std::to_string(st) + ") without an answer; see the server's log");
  int code = std::atoi(res.substr(0, nl).c_str());
  if (code != 0) throw Error(res.substr(nl + 1), 0, code);
  return res.substr(nl + 1);
}

}  // namespace sbx::server
