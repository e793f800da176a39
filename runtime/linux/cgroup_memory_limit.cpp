// A running sandbox's memory limit (cgroup_memory_limit.h).
#include "runtime/linux/cgroup_memory_limit.h"

#include "common/error.h"
#include "runtime/linux/cgroup_control.h"
#include "runtime/linux/cgroups.h"

namespace sbx::runtime {

void set_sandbox_memory_limit(const std::string& sandbox_id, int64_t bytes) {
  if (bytes <= 0) throw Error("a memory limit must be above 0 bytes");
  const std::string parent = sandboxes_parent_dir();
  if (parent.empty()) throw Error("a memory limit needs the memory cgroup controller, which this host does not have");
  const std::string dir = parent + "/sbx-" + sandbox_id.substr(0, 12);
  CgroupRoles roles;
  roles.dirs = {dir};
  if (cgroup_mode() == CgroupMode::Unified) roles.unified = dir;
  roles.memory = dir;
  CgroupLimits limit, swap;
  limit.memory_limit = bytes;
  swap.memory_swap = bytes;
  if (cgroup_mode() == CgroupMode::Unified) {
    // (swap.max is written as memsw minus the limit: 0.)
    limit.memory_swap = bytes;
    write_cgroup_limits(roles, limit);
    return;
  }
  // v1 refuses a limit above memsw and a memsw below the limit: lowering
  // goes limit first, raising memsw first. Which one this is: try.
  try {
    write_cgroup_limits(roles, limit);
  } catch (const Error&) {
    write_cgroup_limits(roles, swap);
    write_cgroup_limits(roles, limit);
    return;
  }
  write_cgroup_limits(roles, swap);
}

}  // namespace sbx::runtime
