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
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/cgroup_freeze.h"

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

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

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
  static_cast<runtime::CgroupRoles&>(p) = runtime::CgroupRoles::probe(dirs);
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
            if (read_file(cur + "/" + f).empty()) fs::write_existing(cur + "/" + f, read_file(parent + "/" + f));
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
  try {
    runtime::write_cgroup_limits(*this, r);
  } catch (const Error& e) {
    throw Error(std::string("linux.resources: ") + e.what(), e.err());
  }
}

void CgroupPaths::add(pid_t pid) const {
  for (const auto& d : dirs) fs::write_existing(d + "/cgroup.procs", std::to_string(pid));
}

std::vector<pid_t> CgroupPaths::procs() const { return runtime::cgroup_pids(*this); }

void CgroupPaths::signal_all(int sig) const noexcept { runtime::signal_cgroup(*this, sig); }

// The v1 freezer where there is one (runc's choice on a hybrid host), else
// the v2 dir.
std::string CgroupPaths::freeze_dir() const {
  if (!freezer.empty()) return freezer;
  if (!unified.empty() && ::access((unified + "/cgroup.freeze").c_str(), F_OK) == 0) return unified;
  return "";
}

void CgroupPaths::freeze(bool on) const {
  const std::string d = freeze_dir();
  if (d.empty()) throw Error("pause/resume: the container's cgroup has no freezer on this host");
  if (!on) return runtime::thaw_cgroups({d});
  runtime::CgroupFreeze f({d}, std::chrono::milliseconds(1000));
  f.release();  // stays frozen until resume
}

bool CgroupPaths::frozen() const noexcept {
  try {
    const std::string d = freeze_dir();
    return !d.empty() && runtime::cgroup_frozen(d);
  } catch (...) {
    return false;
  }
}

std::vector<std::string> CgroupPaths::destroy() const noexcept {
  std::vector<std::string> left;
  if (frozen()) {
    try {
      freeze(false);
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
