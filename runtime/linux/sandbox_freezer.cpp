#include "runtime/linux/sandbox_freezer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/cgroups.h"
#include "runtime/state.h"

namespace sbx::runtime {

namespace {

bool freezable(const std::string& cg) { return fs::exists(cg + "/cgroup.freeze") || fs::exists(cg + "/freezer.state"); }

/// The pids in DIR/cgroup.procs ({} when the cgroup is gone).
std::set<pid_t> procs_of(const std::string& dir) {
  std::string text;
  try {
    text = fs::read_file(dir + "/cgroup.procs");
  } catch (const Error& e) {
    if (e.err() == ENOENT) return {};
    throw;
  }
  std::set<pid_t> out;
  for (const char* p = text.c_str(); *p;) {
    char* end;
    long pid = std::strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) out.insert(static_cast<pid_t>(pid));
    p = end;
    while (*p == '\n') ++p;
  }
  return out;
}

}  // namespace

size_t gather_processes(const std::string& into, const std::vector<std::string>& members, int max_passes) {
  const std::string procs = into + "/cgroup.procs";
  size_t moved = 0;
  for (int pass = 0; pass < max_passes; ++pass) {
    std::set<pid_t> inside = procs_of(into);
    size_t moved_now = 0;
    for (const auto& m : members)
      for (pid_t pid : procs_of(m)) {
        if (inside.count(pid)) continue;
        int err = fs::try_write_existing(procs, std::to_string(pid));
        if (err == ESRCH) continue;  // exited meanwhile
        if (err) throw_errno("move process " + std::to_string(pid) + " of the sandbox into " + procs, err);
        inside.insert(pid);
        ++moved_now;
      }
    // A pass that found everyone inside: any process forked from now on is a
    // child of one inside, and is born inside.
    if (moved_now == 0) return moved;
    moved += moved_now;
  }
  throw Error("the sandbox's processes could not all be moved into " + into + " after " + std::to_string(max_passes) +
              " passes (it forks faster than sbx can gather them); retry, or stop the sandbox first");
}

std::optional<SandboxFreezer> sandbox_freezer(const std::string& dir) {
  SandboxState st = read_state(dir);
  if (!state_alive(st)) return std::nullopt;
  const std::string sid = st.id.substr(0, 12);
  SandboxFreezer f;
  const std::string lazy = lazy_freezer_dir(st.id);
  if (lazy.empty()) {
    // Unified host (the sandbox's own v2 cgroup has cgroup.freeze) or a legacy
    // one whose sandboxes got their freezer at start.
    for (const auto& cg : st.cgroups)
      if (freezable(cg)) f.cgroups.push_back(cg);
    if (f.cgroups.empty())
      throw Error("sandbox " + sid + " has no freezable cgroup and this host has no cgroup freezer "
                  "(neither cgroup2 nor the v1 freezer controller is mounted under /sys/fs/cgroup)");
    return f;
  }
  for (const auto& cg : st.cgroups)
    if (cg != lazy && fs::exists(cg + "/cgroup.procs")) f.members.push_back(cg);
  if (f.members.empty())
    throw Error("sandbox " + sid + " has no cgroup that lists its processes (state.json names none), so sbx cannot "
                "gather them into a freezer; stop it to snapshot it consistently");
  if (std::find(st.cgroups.begin(), st.cgroups.end(), lazy) == st.cgroups.end()) {
    // Recorded before it exists: a crash between the two leaves a name that
    // rm and gc skip (ENOENT), never a cgroup nobody knows about.
    fs::FileLock lock(dir + "/lock");
    st = read_state(dir);
    if (std::find(st.cgroups.begin(), st.cgroups.end(), lazy) == st.cgroups.end()) {
      st.cgroups.push_back(lazy);
      write_state(dir, st);
    }
  }
  if (::mkdir(lazy.c_str(), 0755) == 0)
    f.created = true;
  else if (errno != EEXIST)
    throw_errno_hint("create the freezer cgroup " + lazy + " for sandbox " + sid, "sbx needs root and a writable cgroup file system");
  f.cgroups.push_back(lazy);
  gather_processes(lazy, f.members);
  return f;
}

}  // namespace sbx::runtime
