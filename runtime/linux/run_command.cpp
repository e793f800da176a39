#include "runtime/linux/run_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace sbx::runtime {

int run_with_output(const std::vector<std::string>& argv, int out_fd) {
  // Everything the child needs is made before fork: the child of a threaded
  // parent (FileOutputPump) may only make async-signal-safe calls.
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const std::string exec_failed = "sbx: execute " + argv[0] + ": ";
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for " + argv[0]);
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    int out = out_fd >= 0 ? out_fd : null;
    if (null >= 0) ::dup2(null, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    ::execv(a[0], a.data());
    const char* why = std::strerror(errno);
    (void)!::write(2, exec_failed.data(), exec_failed.size());
    (void)!::write(2, why, std::strlen(why));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

int run_quiet(const std::vector<std::string>& argv) { return run_with_output(argv, -1); }

int run_logged(const std::vector<std::string>& argv, const std::string& out_file) {
  int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0) throw_errno("open " + out_file + " for the output of " + argv[0]);
  int st;
  try {
    st = run_with_output(argv, out);
  } catch (...) {
    ::close(out);
    throw;
  }
  ::close(out);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}


}  // namespace sbx::runtime
