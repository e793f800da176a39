#include "runtime/default_bounds.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "common/units.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/mounts.h"

namespace sbx::runtime {

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t read_mem_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 4 * kGiB;
}

}  // namespace

uint64_t parent_memory_limit(uint64_t total) {
  uint64_t headroom = std::max(total / 5, 2 * kGiB);
  return std::max(total > headroom ? total - headroom : 0, total / 2);
}

const DefaultBounds& default_bounds() {
  static const DefaultBounds b = [] {
    DefaultBounds d;
    d.host_memory_bytes = read_mem_total();
    d.parent_memory_bytes = parent_memory_limit(d.host_memory_bytes);
    d.memory_bytes = static_cast<int64_t>(std::min<uint64_t>(4 * kGiB, d.parent_memory_bytes));
    d.disk_bytes = 2 * kGiB;
    d.disk_inodes = tmpfs_inodes_for(d.disk_bytes);
    d.dev_bytes = 64 * kMiB;
    d.dev_inodes = 4096;
    d.shm_bytes = 64 * kMiB;
    d.shm_inodes = 16384;
    d.nofile_soft = 1024;
    d.nofile_hard = 65536;
    d.pids = 1024;
    return d;
  }();
  return b;
}

void apply_default_bounds(SandboxSpec& spec, bool writable_layer) {
  const DefaultBounds& d = default_bounds();
  if (!spec.resources.memory_bytes) spec.resources.memory_bytes = d.memory_bytes;
  if (writable_layer && spec.disk_bytes == 0 && spec.upper_dir.empty()) spec.disk_bytes = d.disk_bytes;
  bool has_nofile = false;
  for (const auto& r : spec.process.rlimits) has_nofile |= r.type == "RLIMIT_NOFILE";
  if (!has_nofile) {
    // Never above the caller's own hard limit (raising it needs
    // CAP_SYS_RESOURCE in the host's user namespace): a default, no warning.
    uint64_t hard = d.nofile_hard;
    struct rlimit cur {};
    if (::getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max < hard) hard = cur.rlim_max;
    spec.process.rlimits.push_back(Rlimit{"RLIMIT_NOFILE", std::min(d.nofile_soft, hard), hard});
  }
}

std::vector<std::pair<std::string, std::string>> describe_default_bounds() {
  const DefaultBounds& d = default_bounds();
  auto sz = [](uint64_t b) { return units::format_size(b); };
  return {
      {"memory", sz(static_cast<uint64_t>(d.memory_bytes)) + " per sandbox (--memory)"},
      {"all sandboxes", sz(d.parent_memory_bytes) + " of " + sz(d.host_memory_bytes) +
                            " (memory limit of the parent cgroup " + sandboxes_parent_dir() + ")"},
      {"writable layer", sz(d.disk_bytes) + ", " + std::to_string(d.disk_inodes) +
                             " inodes (sbx run, native: --disk; gVisor: within --memory)"},
      {"/dev", sz(d.dev_bytes) + ", " + std::to_string(d.dev_inodes) + " inodes"},
      {"/dev/shm", sz(d.shm_bytes) + ", " + std::to_string(d.shm_inodes) + " inodes (--tmpfs /dev/shm:size=…)"},
      {"open files", "nofile=" + std::to_string(d.nofile_soft) + ":" + std::to_string(d.nofile_hard) +
                         " (--ulimit nofile=…)"},
      {"processes", std::to_string(d.pids) + " (--pids-limit)"},
  };
}

std::string dev_tmpfs_options() {
  const DefaultBounds& d = default_bounds();
  return "size=" + std::to_string(d.dev_bytes) + ",nr_inodes=" + std::to_string(d.dev_inodes);
}

std::string shm_tmpfs_options() {
  const DefaultBounds& d = default_bounds();
  return "size=" + std::to_string(d.shm_bytes) + ",nr_inodes=" + std::to_string(d.shm_inodes);
}

}  // namespace sbx::runtime
