#include "runtime/native/child_channel.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "runtime/linux/seccomp.h"

namespace sbx::runtime {

void send_error(int sock, int code, const std::string& msg) noexcept {
  std::string m = "E";
  m += static_cast<char>(code);
  m += msg;
  (void)!::send(sock, m.data(), m.size(), MSG_NOSIGNAL);
}

void send_fds(int sock, char tag, const std::vector<int>& fds) {
  constexpr size_t kMax = 16;
  if (fds.empty() || fds.size() > kMax) throw Error("send_fds: 1 to 16 fds (front-end bug)");
  struct iovec iov {&tag, 1};
  alignas(struct cmsghdr) char buf[CMSG_SPACE(kMax * sizeof(int))] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = buf;
  msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  if (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) throw_errno(std::string("send message '") + tag + "' with fds");
}

void send_fd(int sock, int fd) {
  try {
    send_fds(sock, 'P', {fd});
  } catch (const Error& e) {
    throw_errno("send the pty to sbx", e.err());
  }
}

ChildReport read_child_report(int sock, char stop_at) {
  ChildReport r;
  bool reset = false;
  for (;;) {
    char buf[4096];
    struct iovec iov {buf, sizeof buf};
    alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
    struct msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    ssize_t n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    // A child that dies with sbx's sync bytes ('U', 'G') unread in its queue
    // sets ECONNRESET on our socket (unix_release_sock), and recvmsg reports
    // that pending error before the messages still queued here: the child's
    // error report. The error is cleared once reported; read on.
    if (n < 0 && errno == ECONNRESET && !reset) {
      reset = true;
      continue;
    }
    if (n < 0) {
      r.read_errno = errno;
      break;
    }
    if (n == 0) {  // EOF: the command was exec'd (or the child died)
      if (reset && r.error.empty()) r.read_errno = ECONNRESET;
      break;
    }
    if (stop_at && n == 1 && buf[0] == stop_at) {
      r.stopped = true;
      break;
    }
    if (buf[0] == 'P') {
      struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      if (c && c->cmsg_type == SCM_RIGHTS) std::memcpy(&r.pty_master, CMSG_DATA(c), sizeof(int));
    } else if (buf[0] == 'E' && n >= 2) {
      r.exit_code = static_cast<unsigned char>(buf[1]);
      r.error.assign(buf + 2, static_cast<size_t>(n - 2));
    }
  }
  return r;
}

std::string find_executable(const std::string& cmd, const std::vector<std::string>& env) {
  if (cmd.find('/') != std::string::npos) return cmd;
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  int err = ENOENT;
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string full = (dir.empty() ? "." : dir) + "/" + cmd;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(full.c_str(), X_OK) == 0) return full;
      err = EACCES;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  errno = err;
  return {};
}

std::string resolve_command(const std::string& cmd, const std::vector<std::string>& env) {
  std::string exe = find_executable(cmd, env);
  if (exe.empty()) {
    int err = errno;
    if (err == EACCES) throw Error(ErrorKind::NotFound,
                "exec: \"" + cmd + "\": permission denied", err, kExitCannotExec);
    throw Error("exec: \"" + cmd + "\": executable file not found in $PATH", err, kExitNotFound);
  }
  return exe;
}

void exec_file(const std::string& exe, const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for KILL, STOP: fine
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(exe.c_str(), argv.data(), envp.data());
  int e = errno;
  throw Error("exec " + exe + ": " + std::strerror(e) + " (" + errno_name(e) + ")", e,
              (e == ENOENT || e == ENOTDIR) ? kExitNotFound : kExitCannotExec);
}

void exec_command(const std::vector<std::string>& args, const std::vector<std::string>& env,
                  bool no_new_privileges) {
  std::string exe = resolve_command(args[0], env);
  if (no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) throw_errno("PR_SET_NO_NEW_PRIVS");
  if (no_new_privileges) install_default_seccomp();  // last: nothing but execve after it
  exec_file(exe, args, env);
}

}  // namespace sbx::runtime
