// What this host can run: a quick, side-effect-free probe of each runtime's
// requirements, for `sbx info` (and for clear errors before a start).
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

/// Probes the native backend (root, namespaces, overlayfs, seccomp, cgroups)
/// and the gvisor backend (runsc at `runsc`, or on $PATH, its version and
/// features: runtime/gvisor/runsc_features.h). Never throws.
std::vector<RuntimeSupport> probe_runtimes(const std::string& runsc = "");

/// "v2 (unified)", "v1 (legacy)" or "hybrid (v1 controllers + cgroup2)".
std::string cgroup_mode_name();

}  // namespace sbx::runtime
