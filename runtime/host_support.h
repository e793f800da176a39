// What this host can run: what a quick, side-effect-free probe of each
// backend's requirements finds (runtime/backend.h Backend::probe; all of them:
// runtime/backends.h probe_runtimes), for `sbx info`.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sbx::runtime {

struct RuntimeSupport {
  std::string name;    ///< "native" or "gvisor"
  bool usable = false;
  std::string detail;  ///< what was found, or why it is not usable and what to do
  /// gvisor: what the found runsc can do (runtime/gvisor/runsc_features.h):
  /// "nvproxy", "overlay_size", "exec_tty" -> present. Empty for native.
  std::map<std::string, bool> features;
};

/// "v2 (unified)", "v1 (legacy)" or "hybrid (v1 controllers + cgroup2)".
std::string cgroup_mode_name();

}  // namespace sbx::runtime
