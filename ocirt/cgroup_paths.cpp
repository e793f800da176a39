#include "ocirt/cgroup_paths.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "runtime/linux/cgroups.h"

namespace sbx::ocirt {

namespace {

struct Hierarchy {
  std::string mountpoint;  ///< /sys/fs/cgroup/memory
  std::string own;         ///< this process's cgroup there ("/" or "/a/b")
  std::string options;     ///< controllers ("memory", "cpu,cpuacct", "name=systemd") or "" for v2
  bool v2 = false;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

// /proc/self/mountinfo cgroup mounts, joined with /proc/self/cgroup.
std::vector<Hierarchy> hierarchies() {
  std::map<std::string, std::string> own;  // controllers ("" for v2) -> path
  {
    std::ifstream f("/proc/self/cgroup");
    std::string line;
    while (std::getline(f, line)) {
      auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      own[line.substr(a + 1, b - a - 1)] = line.substr(b + 1);
    }
  }
  std::vector<Hierarchy> out;
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto pre = split(line.substr(0, dash), ' ');
    auto post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3) continue;
    const std::string& mp = pre[4];
    if (mp.rfind("/sys/fs/cgroup", 0) != 0) continue;
    Hierarchy h;
    h.mountpoint = mp;
    if (post[0] == "cgroup2") {
      h.v2 = true;
    } else if (post[0] == "cgroup") {
      std::string ctl;
      for (const auto& o : split(post[2], ',')) {
        if (o == "rw" || o == "ro" || o.rfind("release_agent", 0) == 0 || o == "clone_children" || o == "noprefix" ||
            o == "xattr" || o == "nsdelegate" || o == "cpuset_v2_mode")
          continue;
        ctl += (ctl.empty() ? "" : ",") + o;
      }
      h.options = ctl;
    } else {
      continue;
    }
    auto it = own.find(h.options);
    h.own = it == own.end() ? "/" : it->second;
    if (pre[3] != "/") continue;  // a hierarchy mounted from a sub-cgroup: skip (nested cgroup ns)
    out.push_back(h);
  }
  return out;
}

void write_file(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  if (!f) throw_errno("open " + path);
  f << value;
  f.flush();
  if (!f) throw_errno("write '" + value + "' to " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

bool has(const std::string& opts, const char* ctl) {
  for (const auto& o : split(opts, ','))
    if (o == ctl) return true;
  return false;
}

std::string join_path(const std::string& base, const std::string& rel) {
  std::string b = base == "/" ? "" : base;
  return b + "/" + rel;
}

}  // namespace

CgroupPaths CgroupPaths::from_dirs(const std::vector<std::string>& dirs) {
  CgroupPaths p;
  p.dirs = dirs;
  for (const auto& d : dirs) {
    if (exists(d + "/memory.limit_in_bytes")) p.memory = d;
    if (exists(d + "/pids.max") && p.pids.empty()) p.pids = d;
    if (exists(d + "/freezer.state")) p.freezer = d;
    if (exists(d + "/cpu.shares")) p.cpu = d;
    if (exists(d + "/devices.allow")) p.devices = d;
    if (exists(d + "/cgroup.freeze") || exists(d + "/cgroup.type")) p.unified = d;
  }
  return p;
}

CgroupPaths CgroupPaths::create(const std::string& cgroups_path, const std::string& id, const Resources& res) {
  std::string rel = cgroups_path.empty() ? "sbx-runc/" + id : cgroups_path;
  if (rel.find("..") != std::string::npos) throw Error("config.json: linux.cgroupsPath: '" + rel + "' must not contain '..'");
  if (rel.find(':') != std::string::npos && rel[0] != '/')
    throw Error("config.json: linux.cgroupsPath: '" + rel +
                "' is a systemd slice:prefix:name path; sbx-runc manages cgroups with cgroupfs "
                "(use --cgroup-manager cgroupfs / SystemdCgroup = false)");
  // A parent removed by a concurrent destroy() between our mkdirs (the
  // default "sbx-runc" parent goes with its last container): start again.
  for (int attempt = 0;; ++attempt) {
    try {
      return create_once(rel, res);
    } catch (const Error& e) {
      if (e.err() != ENOENT || attempt >= 10) throw;
    }
  }
}

CgroupPaths CgroupPaths::create_once(const std::string& rel, const Resources& res) {
  CgroupPaths p;
  try {
    for (const auto& h : hierarchies()) {
      std::string dir = h.mountpoint + (rel[0] == '/' ? rel : join_path(h.own, rel));
      // mkdir -p, copying cpuset.cpus/mems into new cpuset dirs (v1 leaves them
      // empty, and an empty cpuset takes no process).
      std::string cur = h.mountpoint;
      for (const auto& part : split(dir.substr(h.mountpoint.size()), '/')) {
        if (part.empty()) continue;
        std::string parent = cur;
        cur += "/" + part;
        if (::mkdir(cur.c_str(), 0755) < 0) {
          if (errno != EEXIST) throw_errno("create cgroup " + cur);
          continue;
        }
        if (cur == dir) p.dirs.push_back(dir);
        if (!h.v2 && has(h.options, "cpuset")) {
          for (const char* f : {"cpuset.cpus", "cpuset.mems"})
            if (read_file(cur + "/" + f).empty()) write_file(cur + "/" + f, read_file(parent + "/" + f));
        }
      }
      if (std::find(p.dirs.begin(), p.dirs.end(), dir) == p.dirs.end()) p.dirs.push_back(dir);
    }
    CgroupPaths q = from_dirs(p.dirs);
    q.apply(res);
    return q;
  } catch (...) {
    for (auto it = p.dirs.rbegin(); it != p.dirs.rend(); ++it) ::rmdir(it->c_str());
    throw;
  }
}

void CgroupPaths::apply(const Resources& r) const {
  const bool v2 = runtime::cgroup_mode() == runtime::CgroupMode::Unified;
  if (v2) {
    const std::string& d = unified;
    if (d.empty()) return;
    if (r.memory_limit) write_file(d + "/memory.max", *r.memory_limit > 0 ? std::to_string(*r.memory_limit) : "max");
    if (r.memory_reservation && *r.memory_reservation > 0) write_file(d + "/memory.low", std::to_string(*r.memory_reservation));
    if (r.memory_swap && exists(d + "/memory.swap.max")) {
      int64_t s = *r.memory_swap;
      write_file(d + "/memory.swap.max", s < 0 ? "max" : std::to_string(std::max<int64_t>(0, s - r.memory_limit.value_or(0))));
    }
    if (r.cpu_shares && *r.cpu_shares > 0)
      write_file(d + "/cpu.weight", std::to_string(1 + ((*r.cpu_shares - 2) * 9999) / 262142));
    if (r.cpu_quota || r.cpu_period) {
      int64_t q = r.cpu_quota.value_or(-1);
      write_file(d + "/cpu.max", (q > 0 ? std::to_string(q) : "max") + " " + std::to_string(r.cpu_period.value_or(100000)));
    }
    if (!r.cpuset_cpus.empty()) write_file(d + "/cpuset.cpus", r.cpuset_cpus);
    if (!r.cpuset_mems.empty()) write_file(d + "/cpuset.mems", r.cpuset_mems);
    if (r.pids_limit) write_file(d + "/pids.max", *r.pids_limit > 0 ? std::to_string(*r.pids_limit) : "max");
    // Device rules on cgroup v2 need a BPF program, which sbx does not load
    // (runtime/linux/cgroups.cpp says the same for sbx run); CAP_MKNOD and
    // the devices in linux.devices bound what the container reaches.
    return;
  }
  if (!memory.empty()) {
    if (r.memory_limit) write_file(memory + "/memory.limit_in_bytes", std::to_string(*r.memory_limit > 0 ? *r.memory_limit : -1));
    if (r.memory_swap && exists(memory + "/memory.memsw.limit_in_bytes"))
      write_file(memory + "/memory.memsw.limit_in_bytes", std::to_string(*r.memory_swap));
    if (r.memory_reservation) write_file(memory + "/memory.soft_limit_in_bytes", std::to_string(*r.memory_reservation));
  } else if (r.memory_limit) {
    throw Error("config.json: linux.resources.memory.limit: this host has no memory cgroup controller");
  }
  if (!cpu.empty()) {
    if (r.cpu_shares) write_file(cpu + "/cpu.shares", std::to_string(*r.cpu_shares));
    if (r.cpu_period) write_file(cpu + "/cpu.cfs_period_us", std::to_string(*r.cpu_period));
    if (r.cpu_quota) write_file(cpu + "/cpu.cfs_quota_us", std::to_string(*r.cpu_quota > 0 ? *r.cpu_quota : -1));
  }
  for (const auto& d : dirs) {
    if (!r.cpuset_cpus.empty() && exists(d + "/cpuset.cpus")) write_file(d + "/cpuset.cpus", r.cpuset_cpus);
    if (!r.cpuset_mems.empty() && exists(d + "/cpuset.mems")) write_file(d + "/cpuset.mems", r.cpuset_mems);
  }
  if (r.pids_limit) {
    if (pids.empty()) throw Error("config.json: linux.resources.pids.limit: this host has no pids cgroup controller");
    write_file(pids + "/pids.max", *r.pids_limit > 0 ? std::to_string(*r.pids_limit) : "max");
  }
  if (!devices.empty()) {
    for (const auto& rule : r.devices) {
      std::string t(1, rule.type);
      std::string line = rule.type == 'a' ? "a" : t + " " + (rule.major < 0 ? "*" : std::to_string(rule.major)) + ":" +
                                                 (rule.minor < 0 ? "*" : std::to_string(rule.minor)) + " " + rule.access;
      write_file(devices + (rule.allow ? "/devices.allow" : "/devices.deny"), line);
    }
  }
}

void CgroupPaths::add(pid_t pid) const {
  for (const auto& d : dirs) write_file(d + "/cgroup.procs", std::to_string(pid));
}

std::vector<pid_t> CgroupPaths::procs() const {
  std::string d = !pids.empty() ? pids : !memory.empty() ? memory : dirs.empty() ? "" : dirs.front();
  std::vector<pid_t> out;
  if (d.empty()) return out;
  std::ifstream f(d + "/cgroup.procs");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

void CgroupPaths::signal_all(int sig) const noexcept {
  bool freeze_it = sig == SIGKILL && !freezer.empty();
  try {
    if (freeze_it) write_file(freezer + "/freezer.state", "FROZEN");
  } catch (...) {
    freeze_it = false;
  }
  for (pid_t p : procs()) ::kill(p, sig);
  if (freeze_it) {
    try {
      write_file(freezer + "/freezer.state", "THAWED");
    } catch (...) {
    }
  }
}

void CgroupPaths::freeze(bool on) const {
  if (!freezer.empty()) {
    // v1 passes through FREEZING until every task stopped; runc waits for
    // FROZEN (rewriting it, as tasks that forked meanwhile need it again).
    for (int i = 0; i < 1000; ++i) {
      write_file(freezer + "/freezer.state", on ? "FROZEN" : "THAWED");
      if (!on || read_file(freezer + "/freezer.state") == "FROZEN") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw Error("pause: " + freezer + " did not reach FROZEN within 1 s");
  }
  if (!unified.empty() && exists(unified + "/cgroup.freeze")) {
    write_file(unified + "/cgroup.freeze", on ? "1" : "0");
    return;
  }
  throw Error("pause/resume: the container's cgroup has no freezer on this host");
}

bool CgroupPaths::frozen() const noexcept {
  if (!freezer.empty()) return read_file(freezer + "/freezer.state") == "FROZEN";
  if (!unified.empty() && exists(unified + "/cgroup.freeze")) return read_file(unified + "/cgroup.freeze") == "1";
  return false;
}

std::vector<std::string> CgroupPaths::destroy() const noexcept {
  std::vector<std::string> left;
  if (!freezer.empty() && frozen()) {
    try {
      write_file(freezer + "/freezer.state", "THAWED");
    } catch (...) {
    }
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    left.clear();
    signal_all(SIGKILL);
    for (const auto& d : dirs)
      if (::rmdir(d.c_str()) < 0 && errno != ENOENT) left.push_back(d);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const auto& d : left) log::warn("could not remove cgroup " + d);
  // The default parent (linux.cgroupsPath unset: "sbx-runc/<id>") is sbx-runc's
  // own: it goes with its last container (rmdir fails while others use it;
  // a create racing this retries, see create()).
  for (const auto& d : dirs) {
    std::string parent = d.substr(0, d.rfind('/'));
    if (parent.size() > 9 && parent.compare(parent.size() - 9, 9, "/sbx-runc") == 0) ::rmdir(parent.c_str());
  }
  return left;
}

}  // namespace sbx::ocirt
