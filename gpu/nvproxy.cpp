#include "gpu/nvproxy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <vector>

#include "common/error.h"

extern char** environ;

namespace sbx::gpu {

bool runsc_output_has_nvproxy(std::string_view out) {
  for (size_t pos = out.find("nvproxy"); pos != std::string_view::npos; pos = out.find("nvproxy", pos + 1)) {
    if (pos == 0 || out[pos - 1] != '-') continue;  // must be the flag itself: -nvproxy / --nvproxy
    size_t end = pos + 7;
    if (end < out.size() && (std::isalnum(static_cast<unsigned char>(out[end])) || out[end] == '-' || out[end] == '_'))
      continue;  // -nvproxy-docker etc. alone do not prove --nvproxy exists
    return true;
  }
  return false;
}

namespace {

// Runs argv with stdout+stderr captured, killing it after `timeout_ms`.
std::string capture(const std::vector<std::string>& argv, int timeout_ms) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("pipe for " + argv[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  if (rc != 0) {
    ::close(p[0]);
    throw_errno_hint("run " + argv[0], "is gVisor's runsc installed and on PATH?", rc);
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[8192];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    struct pollfd pf{p[0], POLLIN, 0};
    int n = ::poll(&pf, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t r = ::read(p[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (out.size() < (4u << 20)) out.append(buf, static_cast<size_t>(r));
  }
  ::close(p[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return out;
}

}  // namespace

bool runsc_supports_nvproxy(const std::string& runsc) { return runsc_output_has_nvproxy(capture({runsc, "flags"}, 5000)); }

void require_nvproxy(const std::string& runsc) {
  if (runsc_supports_nvproxy(runsc)) return;
  std::string ver = capture({runsc, "--version"}, 5000);
  if (auto nl = ver.find('\n'); nl != std::string::npos) ver.resize(nl);
  throw Error("--gpus with --runtime gvisor needs runsc with nvproxy support, but " + runsc + " (" + ver +
              ") has no --nvproxy flag; install a gVisor release from 2023 or later, or use --runtime native");
}

}  // namespace sbx::gpu
