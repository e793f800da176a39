#include "runtime/linux/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/default_bounds.h"
#include "runtime/linux/cgroup_control.h"
#include "runtime/linux/cgroup_removal.h"

namespace sbx::runtime {

namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";

/// sbx's own cgroup per hierarchy: "memory" -> "/process_api/x", "" (v2) -> "/".
struct SelfCgroups {
  std::string v2;                                    ///< path in the unified tree, or ""
  std::vector<std::pair<std::string, std::string>> v1;  ///< controller -> path
  std::string v1_path(const std::string& ctrl) const {
    for (auto& [c, p] : v1)
      if (c == ctrl) return p;
    return {};
  }
  bool has_v1(const std::string& ctrl) const {
    for (auto& [c, p] : v1)
      if (c == ctrl) return true;
    return false;
  }
};

// One line of /proc/PID/cgroup (cgroups(7)): "hierarchy-ID:controller-list:cgroup-path";
// an empty controller list is the cgroup2 hierarchy's line.
struct ProcCgroupLine {
  std::string controllers, path;
};

std::vector<ProcCgroupLine> parse_proc_cgroup(const std::string& text) {
  std::vector<ProcCgroupLine> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':');
    auto b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out.push_back({line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

SelfCgroups read_self() {
  SelfCgroups s;
  std::string text;
  try {
    text = fs::read_file("/proc/self/cgroup");
  } catch (const Error&) {
    return s;
  }
  for (const auto& [ctrls, path] : parse_proc_cgroup(text)) {
    if (ctrls.empty()) {
      s.v2 = path;
      continue;
    }
    std::istringstream cs(ctrls);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c.rfind("name=", 0) != 0) s.v1.emplace_back(c, path);
  }
  return s;
}

std::string join(const std::string& a, const std::string& b) {
  if (b.empty() || b == "/") return a;
  return a + (b[0] == '/' ? "" : "/") + b;
}

uint64_t read_key(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  uint64_t v;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

bool cgroup_has_procs(const std::string& dir) {
  std::ifstream in(dir + "/cgroup.procs");
  std::string line;
  return static_cast<bool>(std::getline(in, line)) && !line.empty();
}

}  // namespace

std::string sandboxes_parent_dir() {
  switch (cgroup_mode()) {
    case CgroupMode::Unified:
      return std::string(kRoot) + "/sbx";
    case CgroupMode::Hybrid:
    case CgroupMode::Legacy: {
      struct stat st {};
      std::string mem = std::string(kRoot) + "/memory";
      if (::stat(mem.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) return "";
      return mem + "/sbx";
    }
  }
  return "";
}

std::string ensure_sandboxes_parent() {
  const std::string dir = sandboxes_parent_dir();
  if (dir.empty()) return dir;
  // The common case costs one mkdir(2) that fails with EEXIST: the limit is
  // written only by the sbx that made the dir. The last sandbox's teardown
  // may rmdir it between our mkdir and the writes (ENOENT): then again.
  for (int attempt = 0;; ++attempt) {
    if (::mkdir(dir.c_str(), 0755) < 0) {
      if (errno == EEXIST) return dir;
      throw_errno_hint("create the sandboxes' parent cgroup " + dir, "sbx needs root and a writable cgroup file system");
    }
    const std::string limit = std::to_string(default_bounds().parent_memory_bytes);
    try {
      if (cgroup_mode() == CgroupMode::Unified) {
        fs::try_write_existing(std::string(kRoot) + "/cgroup.subtree_control", "+memory +pids +cpu");
        fs::write_existing(dir + "/memory.max", limit);
        fs::try_write_existing(dir + "/memory.swap.max", "0");
        fs::try_write_existing(dir + "/cgroup.subtree_control", "+memory +pids +cpu");
      } else {
        fs::write_existing(dir + "/memory.limit_in_bytes", limit);
      }
    } catch (...) {
      struct stat st {};
      bool removed_under_us = ::stat(dir.c_str(), &st) < 0 && errno == ENOENT;
      if (removed_under_us && attempt < 8) continue;
      ::rmdir(dir.c_str());
      throw;
    }
    log::debug("made the sandboxes' parent cgroup " + dir + " (memory limit " + limit + " bytes)");
    return dir;
  }
}

void release_sandboxes_parent() noexcept {
  try {
    if (std::string dir = sandboxes_parent_dir(); !dir.empty()) ::rmdir(dir.c_str());
  } catch (...) {
  }
}

CgroupMode cgroup_mode() {
  static const CgroupMode mode = [] {
    struct statfs st {};
    if (statfs(kRoot, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC) return CgroupMode::Unified;
    std::string unified = std::string(kRoot) + "/unified";
    if (statfs(unified.c_str(), &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC) return CgroupMode::Hybrid;
    return CgroupMode::Legacy;
  }();
  return mode;
}

Cgroup Cgroup::create(const std::string& id, const Resources& res) {
  static const SelfCgroups self = read_self();
  const CgroupMode mode = cgroup_mode();
  const std::string name = "sbx-" + id.substr(0, 12);
  Cgroup cg;
  auto make = [&](const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) < 0)
      throw_errno_hint("create cgroup " + dir, "sbx needs root and a writable cgroup file system");
    cg.roles_.dirs.push_back(dir);
    cg.procs_.push_back(dir + "/cgroup.procs");
  };
  // Below the sandboxes' parent: the last sandbox's teardown may remove the
  // parent between ensure_sandboxes_parent and our mkdir (ENOENT): make it
  // again and retry.
  auto make_below_parent = [&]() {
    for (int attempt = 0;; ++attempt) {
      std::string dir = ensure_sandboxes_parent() + "/" + name;
      if (::mkdir(dir.c_str(), 0755) == 0) {
        cg.roles_.dirs.push_back(dir);
        cg.procs_.push_back(dir + "/cgroup.procs");
        return dir;
      }
      if (errno != ENOENT || attempt == 8)
        throw_errno_hint("create cgroup " + dir, "sbx needs root and a writable cgroup file system");
    }
  };
  // --memory: no swap beyond it (v1 memsw = the limit, v2 swap.max = 0;
  // both exist only with swap accounting). --cpus: a quota per 100 ms period.
  CgroupLimits limits;
  limits.memory_limit = res.memory_bytes;
  limits.memory_swap = res.memory_bytes;
  limits.pids_limit = res.pids_limit;
  if (res.cpus) {
    limits.cpu_period = 100000;
    limits.cpu_quota = std::lround(*res.cpus * 100000.0);
  }
  CgroupRoles& r = cg.roles_;
  try {
    if (mode == CgroupMode::Unified) {
      // Below the sandboxes' parent (its memory limit bounds them all).
      r.unified = r.memory = r.pids = r.cpu = make_below_parent();
      if (!res.devices.empty())
        log::warn("device cgroup rules are not enforced on cgroup v2 (needs BPF); CAP_MKNOD is dropped instead");
      write_cgroup_limits(r, limits);
      return cg;
    }
    auto v1dir = [&](const std::string& ctrl) {
      return join(std::string(kRoot) + "/" + ctrl, self.v1_path(ctrl)) + "/" + name;
    };
    // Every sandbox has a memory cgroup (default bounds), below
    // the sandboxes' parent whose limit leaves the host its headroom.
    if (self.has_v1("memory")) {
      r.memory = make_below_parent();
    } else if (res.memory_bytes) {
      throw Error("--memory needs the memory cgroup controller, which this host does not have");
    }
    if (self.has_v1("pids")) {
      r.pids = v1dir("pids");
      make(r.pids);
    } else if (res.pids_limit) {
      log::warn("the pids cgroup controller is missing: --pids-limit is not enforced");
      limits.pids_limit.reset();
    }
    if (res.cpus) {
      if (!self.has_v1("cpu")) throw Error("--cpus needs the cpu cgroup controller, which this host does not have");
      r.cpu = v1dir("cpu");
      make(r.cpu);
    }
    if (self.has_v1("devices")) {
      // runc's default allow list: mknod of anything, read/write only of the
      // harmless nodes sbx puts in /dev (and ptys); then the sandbox's own.
      r.devices = v1dir("devices");
      make(r.devices);
      limits.devices = {{false, 'a', -1, -1, "rwm"},  {true, 'c', -1, -1, "m"},    {true, 'b', -1, -1, "m"},
                        {true, 'c', 1, 3, "rwm"},     {true, 'c', 1, 5, "rwm"},    {true, 'c', 1, 7, "rwm"},
                        {true, 'c', 1, 8, "rwm"},     {true, 'c', 1, 9, "rwm"},    {true, 'c', 5, 0, "rwm"},
                        {true, 'c', 5, 1, "rwm"},     {true, 'c', 5, 2, "rwm"},    {true, 'c', 136, -1, "rwm"}};
      limits.devices.insert(limits.devices.end(), res.devices.begin(), res.devices.end());
    }
    write_cgroup_limits(r, limits);
    // Killing everything needs no cgroup: the sandbox is a pid namespace, and
    // when its init dies the kernel kills the rest. The freezer is kept on
    // pure v1 hosts only, for kill_all()'s fallback.
    if (mode == CgroupMode::Legacy && self.has_v1("freezer")) {
      r.freezer = v1dir("freezer");
      make(r.freezer);
    }
  } catch (...) {
    cg.destroy();
    throw;
  }
  return cg;
}

Cgroup::Cgroup(Cgroup&& o) noexcept { *this = std::move(o); }

Cgroup& Cgroup::operator=(Cgroup&& o) noexcept {
  if (this != &o) {
    destroy();
    roles_ = std::move(o.roles_);
    procs_ = std::move(o.procs_);
    o.roles_ = {};
    o.procs_.clear();
  }
  return *this;
}

Cgroup::~Cgroup() { destroy(); }

void Cgroup::add(pid_t pid) const {
  std::string text = std::to_string(pid);
  for (const auto& p : procs_) fs::write_existing(p, text);
}

void Cgroup::kill_all() noexcept {
  if (roles_.dirs.empty()) return;
  signal_cgroup(roles_, SIGKILL);
}

uint64_t Cgroup::oom_kills() const noexcept {
  const std::string& memory_ = roles_.memory;
  if (memory_.empty()) return 0;
  try {
    if (cgroup_mode() == CgroupMode::Unified) return read_key(memory_ + "/memory.events", "oom_kill");
    return read_key(memory_ + "/memory.oom_control", "oom_kill");
  } catch (...) {
    return 0;
  }
}

std::vector<std::string> sandbox_cgroup_dirs(const std::string& id) noexcept {
  std::vector<std::string> dirs;
  try {
    const std::string name = "sbx-" + id.substr(0, 12);
    const std::string text = fs::read_file("/proc/self/cgroup");
    auto add = [&](const std::string& mount, const std::string& path) {
      struct stat st {};
      if (::stat(mount.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) return;
      std::string dir = join(mount, path) + "/" + name;
      if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    };
    for (const auto& [ctrls, path] : parse_proc_cgroup(text)) {
      if (ctrls.empty()) {
        if (cgroup_mode() != CgroupMode::Legacy)
          add(cgroup_mode() == CgroupMode::Hybrid ? std::string(kRoot) + "/unified" : std::string(kRoot), path);
        continue;
      }
      std::istringstream cs(ctrls);
      std::string c;
      while (std::getline(cs, c, ',')) add(std::string(kRoot) + "/" + (c.rfind("name=", 0) == 0 ? c.substr(5) : c), path);
    }
    // Where Cgroup::create puts the memory cgroup (v2: the whole cgroup).
    if (std::string parent = sandboxes_parent_dir(); !parent.empty()) {
      std::string dir = parent + "/" + name;
      if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    }
  } catch (...) {
  }
  return dirs;
}

uint64_t Cgroup::pids_max_hits() const noexcept {
  const std::string& pids_ = roles_.pids;
  if (pids_.empty()) return 0;
  try {
    return read_key(pids_ + "/pids.events", "max");
  } catch (...) {
    return 0;
  }
}

void Cgroup::destroy() noexcept {
  std::vector<std::string>& dirs_ = roles_.dirs;
  if (dirs_.empty()) return;
  // Most often every process has exited by now: one rmdir per dir.
  std::vector<std::string> busy;
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it)
    if (::rmdir(it->c_str()) < 0 && errno != ENOENT) busy.push_back(*it);
  if (!busy.empty()) {
    // The whole cgroup at once first (cgroup.kill, or frozen then killed on
    // v1: a fork cannot outrun it), then each dir until it is gone.
    kill_all();
    remove_cgroup_dirs(busy);
  }
  roles_ = {};
  procs_.clear();
  release_sandboxes_parent();
}

std::string lazy_freezer_dir(const std::string& id) {
  static const SelfCgroups self = read_self();
  const std::string name = "sbx-" + id.substr(0, 12);
  switch (cgroup_mode()) {
    case CgroupMode::Unified:
      return "";
    case CgroupMode::Hybrid:
      return join(std::string(kRoot) + "/unified", self.v2) + "/" + name;
    case CgroupMode::Legacy:
      if (!self.has_v1("freezer")) return "";
      return join(std::string(kRoot) + "/freezer", self.v1_path("freezer")) + "/" + name;
  }
  return "";
}

std::vector<std::string> gc_stale_cgroups(int min_age_s) noexcept {
  std::vector<std::string> removed;
  try {
    SelfCgroups self = read_self();
    std::vector<std::string> parents;
    if (cgroup_mode() != CgroupMode::Unified)
      for (auto& [ctrl, path] : self.v1) parents.push_back(join(std::string(kRoot) + "/" + ctrl, path));
    if (cgroup_mode() == CgroupMode::Unified) parents.push_back(join(kRoot, self.v2));
    if (cgroup_mode() == CgroupMode::Hybrid) parents.push_back(join(std::string(kRoot) + "/unified", self.v2));
    if (std::string p = sandboxes_parent_dir(); !p.empty()) parents.push_back(p);
    time_t now = ::time(nullptr);
    for (const auto& parent : parents) {
      DIR* d = ::opendir(parent.c_str());
      if (!d) continue;
      while (struct dirent* e = ::readdir(d)) {
        if (std::strncmp(e->d_name, "sbx-", 4) != 0 || std::strlen(e->d_name) != 16) continue;
        std::string dir = parent + "/" + e->d_name;
        struct stat st {};
        if (::stat(dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
        if (now - st.st_ctime < min_age_s) continue;
        if (cgroup_has_procs(dir)) continue;
        if (::rmdir(dir.c_str()) == 0) removed.push_back(dir);
      }
      ::closedir(d);
    }
    release_sandboxes_parent();
  } catch (...) {
  }
  return removed;
}

}  // namespace sbx::runtime
