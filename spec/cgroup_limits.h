// A cgroup's limits in runtime-spec terms (config-linux.md "Control groups",
// linux.resources): what config.json asks for, and what sbx's one cgroup
// writer (runtime/linux/cgroup_control.h) writes for `sbx run` and sbx-runc.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::spec {

/// The limits, in runtime-spec linux.resources terms (config-linux.md
/// "Control groups"); unset fields are left as the kernel has them.
struct CgroupLimits {
  std::optional<int64_t> memory_limit;        ///< bytes (memory.limit_in_bytes / memory.max); <= 0: none
  std::optional<int64_t> memory_reservation;  ///< bytes (soft limit / memory.low)
  std::optional<int64_t> memory_swap;         ///< bytes, memory + swap (memsw / swap.max = swap - limit); -1: none
  std::optional<uint64_t> swappiness;         ///< 0..100 (v1 memory.swappiness; no v2 interface)
  bool disable_oom_killer = false;            ///< v1 memory.oom_control = 1 (no v2 interface)
  std::optional<int64_t> kernel_tcp;          ///< bytes (v1 memory.kmem.tcp.limit_in_bytes)
  std::optional<uint64_t> cpu_shares;         ///< cpu.shares (v2: converted to cpu.weight)
  std::optional<int64_t> cpu_quota;           ///< µs per period; <= 0: none
  std::optional<uint64_t> cpu_period;         ///< µs
  std::string cpuset_cpus, cpuset_mems;
  std::optional<int64_t> pids_limit;          ///< <= 0: no limit
  std::vector<DeviceRule> devices;            ///< v1 devices.allow / devices.deny, in order
};

}  // namespace sbx::spec
