#include "runtime/host_support.h"

#include "common/error.h"
#include "runtime/linux/cgroups.h"

namespace sbx::runtime {

std::string cgroup_mode_name() {
  try {
    switch (cgroup_mode()) {
      case CgroupMode::Unified: return "v2 (unified)";
      case CgroupMode::Legacy: return "v1 (legacy)";
      case CgroupMode::Hybrid: return "hybrid (v1 controllers + cgroup2)";
    }
  } catch (const Error& e) {
    return std::string("unknown: ") + e.what();
  }
  return "unknown";
}

}  // namespace sbx::runtime
