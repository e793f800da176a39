#include "runtime/linux/cgroup_hierarchy.h"

#include <cstring>

namespace sbx::runtime {

bool cgroup_may_have(const std::string& dir, const char* controller) noexcept {
  static constexpr const char kRoot[] = "/sys/fs/cgroup/";
  constexpr size_t n = sizeof kRoot - 1;
  if (dir.compare(0, n, kRoot) != 0) return true;
  size_t end = dir.find('/', n);
  if (end == std::string::npos) return true;
  std::string_view h(dir.data() + n, end - n);
  if (h == "unified" || h.empty()) return true;
  // The v1 hierarchies are named by their controllers ("cpu,cpuacct").
  std::string_view want(controller);
  for (size_t i = 0; i <= h.size();) {
    size_t comma = h.find(',', i);
    if (comma == std::string_view::npos) comma = h.size();
    if (h.substr(i, comma - i) == want) return true;
    i = comma + 1;
  }
  // A v1 hierarchy name that names no controller at all is unknown: allow.
  static const char* const kKnown[] = {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio",
                                       "pids", "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"};
  for (size_t i = 0; i <= h.size();) {
    size_t comma = h.find(',', i);
    if (comma == std::string_view::npos) comma = h.size();
    std::string_view part = h.substr(i, comma - i);
    // A named hierarchy (mounted "name=systemd", seen as "systemd"): no controller files.
    if (part.rfind("name=", 0) == 0 || part == "systemd") return false;
    for (const char* k : kKnown)
      if (part == k) return false;
    i = comma + 1;
  }
  return true;
}

}  // namespace sbx::runtime
