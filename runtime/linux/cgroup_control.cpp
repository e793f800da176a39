#include "runtime/linux/cgroup_control.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/cgroups.h"

namespace sbx::runtime {

namespace {

bool has(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

void write(const std::string& file, const std::string& value) { fs::write_existing(file, value); }

std::string device_rule(const DeviceRule& d) {
  if (d.type == 'a') return "a";
  return std::string(1, d.type) + " " + (d.major < 0 ? "*" : std::to_string(d.major)) + ":" +
         (d.minor < 0 ? "*" : std::to_string(d.minor)) + " " + d.access;
}

// One open for each run of rules that go to the same file: the kernel takes
// one rule per write(2) (devices_write), and an open of a kernfs file costs as
// much as the write.
void write_device_rules(const std::string& dir, const std::vector<DeviceRule>& rules) {
  size_t i = 0;
  while (i < rules.size()) {
    const bool allow = rules[i].allow;
    const std::string file = dir + (allow ? "/devices.allow" : "/devices.deny");
    int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open " + file);
    for (; i < rules.size() && rules[i].allow == allow; ++i) {
      const std::string rule = device_rule(rules[i]);
      if (::write(fd, rule.data(), rule.size()) < 0) {
        int e = errno;
        ::close(fd);
        throw_errno("write '" + rule + "' to " + file, e);
      }
    }
    ::close(fd);
  }
}

void write_v2(const std::string& d, const CgroupLimits& r) {
  if (r.memory_limit) write(d + "/memory.max", *r.memory_limit > 0 ? std::to_string(*r.memory_limit) : "max");
  if (r.memory_reservation && *r.memory_reservation > 0) write(d + "/memory.low", std::to_string(*r.memory_reservation));
  if (r.memory_swap && has(d + "/memory.swap.max")) {
    // v1's memsw counts memory + swap; v2's swap.max counts swap alone.
    int64_t s = *r.memory_swap;
    write(d + "/memory.swap.max", s < 0 ? "max" : std::to_string(std::max<int64_t>(0, s - r.memory_limit.value_or(0))));
  }
  if (r.swappiness) log::warn("memory swappiness has no cgroup v2 interface; not applied");
  if (r.disable_oom_killer) log::warn("disableOOMKiller has no cgroup v2 interface; not applied");
  if (r.kernel_tcp) log::warn("the kernel TCP memory limit has no cgroup v2 interface; not applied");
  // cpu.weight from shares: the conversion runc and crun use (1..10000 from 2..262144).
  if (r.cpu_shares && *r.cpu_shares > 0)
    write(d + "/cpu.weight", std::to_string(1 + ((*r.cpu_shares - 2) * 9999) / 262142));
  if (r.cpu_quota || r.cpu_period) {
    int64_t q = r.cpu_quota.value_or(-1);
    write(d + "/cpu.max", (q > 0 ? std::to_string(q) : "max") + " " + std::to_string(r.cpu_period.value_or(100000)));
  }
  if (!r.cpuset_cpus.empty()) write(d + "/cpuset.cpus", r.cpuset_cpus);
  if (!r.cpuset_mems.empty()) write(d + "/cpuset.mems", r.cpuset_mems);
  if (r.pids_limit) write(d + "/pids.max", *r.pids_limit > 0 ? std::to_string(*r.pids_limit) : "max");
  // Device rules on cgroup v2 need a BPF program, which sbx does not load;
  // CAP_MKNOD and the device nodes made bound what the sandbox reaches.
}

}  // namespace

CgroupRoles CgroupRoles::probe(const std::vector<std::string>& dirs) {
  CgroupRoles p;
  p.dirs = dirs;
  for (const auto& d : dirs) {
    if (has(d + "/memory.limit_in_bytes") || (p.memory.empty() && has(d + "/memory.max"))) p.memory = d;
    if (p.pids.empty() && has(d + "/pids.max")) p.pids = d;
    if (has(d + "/freezer.state")) p.freezer = d;
    if (has(d + "/cpu.shares") || (p.cpu.empty() && has(d + "/cpu.max"))) p.cpu = d;
    if (has(d + "/devices.allow")) p.devices = d;
    if (has(d + "/cgroup.freeze") || has(d + "/cgroup.type")) p.unified = d;
  }
  return p;
}

void write_cgroup_limits(const CgroupRoles& c, const CgroupLimits& r) {
  if (cgroup_mode() == CgroupMode::Unified) {
    if (!c.unified.empty()) write_v2(c.unified, r);
    return;
  }
  if (!c.memory.empty()) {
    const std::string& m = c.memory;
    if (r.memory_limit) write(m + "/memory.limit_in_bytes", std::to_string(*r.memory_limit > 0 ? *r.memory_limit : -1));
    // memsw exists only with swap accounting; without it swap is not limited.
    if (r.memory_swap && has(m + "/memory.memsw.limit_in_bytes"))
      write(m + "/memory.memsw.limit_in_bytes", std::to_string(*r.memory_swap));
    if (r.memory_reservation) write(m + "/memory.soft_limit_in_bytes", std::to_string(*r.memory_reservation));
    if (r.swappiness) write(m + "/memory.swappiness", std::to_string(*r.swappiness));
    if (r.kernel_tcp) write(m + "/memory.kmem.tcp.limit_in_bytes", std::to_string(*r.kernel_tcp));
    if (r.disable_oom_killer) write(m + "/memory.oom_control", "1");
  } else if (r.memory_limit || r.memory_swap || r.memory_reservation || r.swappiness || r.kernel_tcp ||
             r.disable_oom_killer) {
    throw Error("a memory limit needs the memory cgroup controller, which this host does not have");
  }
  if (!c.cpu.empty()) {
    // The period first: a quota is checked against the period in force.
    if (r.cpu_shares) write(c.cpu + "/cpu.shares", std::to_string(*r.cpu_shares));
    if (r.cpu_period) write(c.cpu + "/cpu.cfs_period_us", std::to_string(*r.cpu_period));
    if (r.cpu_quota) write(c.cpu + "/cpu.cfs_quota_us", std::to_string(*r.cpu_quota > 0 ? *r.cpu_quota : -1));
  } else if (r.cpu_shares || r.cpu_period || r.cpu_quota) {
    throw Error("a cpu limit needs the cpu cgroup controller, which this host does not have");
  }
  for (const auto& d : c.dirs) {
    if (!r.cpuset_cpus.empty() && has(d + "/cpuset.cpus")) write(d + "/cpuset.cpus", r.cpuset_cpus);
    if (!r.cpuset_mems.empty() && has(d + "/cpuset.mems")) write(d + "/cpuset.mems", r.cpuset_mems);
  }
  if (r.pids_limit) {
    if (c.pids.empty()) throw Error("a pids limit needs the pids cgroup controller, which this host does not have");
    write(c.pids + "/pids.max", *r.pids_limit > 0 ? std::to_string(*r.pids_limit) : "max");
  }
  if (!c.devices.empty()) write_device_rules(c.devices, r.devices);
}

std::vector<pid_t> cgroup_pids(const CgroupRoles& c) noexcept {
  const std::string& d = !c.pids.empty() ? c.pids : !c.memory.empty() ? c.memory : c.dirs.empty() ? c.unified : c.dirs.front();
  std::vector<pid_t> out;
  if (d.empty()) return out;
  std::ifstream f(d + "/cgroup.procs");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

void signal_cgroup(const CgroupRoles& c, int sig) noexcept {
  if (sig != SIGKILL) {
    for (pid_t p : cgroup_pids(c)) ::kill(p, sig);
    return;
  }
  if (!c.unified.empty() && fs::try_write_existing(c.unified + "/cgroup.kill", "1") == 0) return;
  // v1: freeze so that nothing forks while we kill, then kill each, then
  // thaw so that the SIGKILLs are delivered.
  const bool frozen = !c.freezer.empty() && fs::try_write_existing(c.freezer + "/freezer.state", "FROZEN") == 0;
  for (int round = 0; round < 3; ++round) {
    bool any = false;
    for (const auto& d : c.dirs) {
      std::ifstream in(d + "/cgroup.procs");
      pid_t pid;
      while (in >> pid) {
        any = true;
        ::kill(pid, SIGKILL);
      }
    }
    if (!any) break;
  }
  if (frozen) fs::try_write_existing(c.freezer + "/freezer.state", "THAWED");
}

}  // namespace sbx::runtime
