#include "runtime/host_support.h"

#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/cgroups.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/gvisor/runsc_features.h"

namespace sbx::runtime {

namespace {
bool kernel_has_filesystem(const std::string& name) {
  try {
    std::string fs = fs::read_file("/proc/filesystems");
    return fs.find("\t" + name + "\n") != std::string::npos;
  } catch (const Error&) {
    return false;
  }
}
}  // namespace

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

std::vector<RuntimeSupport> probe_runtimes(const std::string& runsc) {
  std::vector<RuntimeSupport> out;
  RuntimeSupport native{"native", true, "", {}};
  std::string missing;
  if (::geteuid() != 0) missing += "needs root; ";
  if (!kernel_has_filesystem("overlay")) missing += "overlayfs missing (modprobe overlay); ";
  for (const char* ns : {"mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    if (!fs::exists(std::string("/proc/self/ns/") + ns)) missing += std::string(ns) + " namespace missing; ";
  }
  if (!fs::exists("/proc/sys/kernel/seccomp/actions_avail")) missing += "seccomp filters missing; ";
  if (missing.empty()) {
    native.detail = "namespaces, overlayfs, seccomp; cgroups " + cgroup_mode_name();
  } else {
    native.usable = false;
    native.detail = missing.substr(0, missing.size() - 2);
  }
  out.push_back(native);

  RuntimeSupport gv{GvisorBackend::kName, false, "", {}};
  try {
    std::string path = find_runsc(runsc);
    RunscFeatures f = runsc_features(path);
    gv.detail = path + ": " + f.version + "; " + describe_runsc_features(f);
    gv.features = {{"nvproxy", f.nvproxy}, {"overlay_size", f.overlay_size}, {"exec_tty", f.exec_tty}};
    gv.usable = ::geteuid() == 0;
    if (!gv.usable) gv.detail += "; needs root";
  } catch (const Error& e) {
    gv.detail = e.what();
  }
  out.push_back(gv);
  return out;
}

}  // namespace sbx::runtime
