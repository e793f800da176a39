#include "runtime/linux/cgroup_removal.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/cgroup_control.h"

namespace sbx::runtime {

namespace {

/// The pids one cgroup dir's cgroup.procs lists (empty when it cannot be read).
std::vector<pid_t> pids_in(const std::string& dir) {
  CgroupRoles one;
  one.dirs = {dir};
  return cgroup_pids(one);
}

/// "pid 42 (sleep, state D)" for the first few processes in the cgroup:
/// what a warning about a busy cgroup should name.
std::string describe_holders(const std::string& dir) {
  std::string out;
  int n = 0;
  for (pid_t pid : pids_in(dir)) {
    if (n++ == 4) {
      out += ", ...";
      break;
    }
    std::string stat;
    try {
      stat = fs::read_file("/proc/" + std::to_string(pid) + "/stat");
    } catch (const std::exception&) {
    }
    // /proc/PID/stat: "PID (COMM) STATE ...", COMM may hold spaces and ')'.
    std::string comm = "?", state = "?";
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      comm = stat.substr(open + 1, close - open - 1);
      if (close + 2 < stat.size()) state = stat.substr(close + 2, 1);
    }
    out += (out.empty() ? "" : ", ") + std::string("pid ") + std::to_string(pid) + " (" + comm + ", state " + state + ")";
  }
  return out.empty() ? "no process listed" : out;
}

}  // namespace

int remove_cgroup_dirs(const std::vector<std::string>& dirs, int budget_ms) noexcept {
  int first = 0;
  try {
    std::vector<std::string> left;
    for (const auto& d : dirs)
      if (!d.empty()) left.push_back(d);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
    for (int round = 0; !left.empty(); ++round) {
      for (size_t i = 0; i < left.size();) {
        if (::rmdir(left[i].c_str()) == 0 || errno == ENOENT) {
          left.erase(left.begin() + static_cast<long>(i));
          continue;
        }
        if (errno != EBUSY) {
          const int e = errno;
          if (!first) first = e;
          log::warn("cannot remove cgroup " + left[i] + ": " + std::strerror(e) + "; 'sbx gc' will retry");
          left.erase(left.begin() + static_cast<long>(i));
          continue;
        }
        // Busy: kill what is in it (again: a process may have been forked
        // into it meanwhile) and come back to it after the others.
        for (pid_t pid : pids_in(left[i])) ::kill(pid, SIGKILL);
        ++i;
      }
      if (left.empty()) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        for (const auto& d : left)
          log::warn("cgroup " + d + " is still busy after " + std::to_string(budget_ms) + " ms (" +
                    describe_holders(d) + "); 'sbx gc' will remove it");
        if (!first) first = EBUSY;
        break;
      }
      // Killed processes take a moment to exit: short waits first.
      std::this_thread::sleep_for(std::chrono::milliseconds(round < 10 ? 2 : 10));
    }
  } catch (...) {
    if (!first) first = ENOMEM;
  }
  return first;
}

}  // namespace sbx::runtime
