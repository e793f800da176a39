// Engine: what this host offers (`sbx info`): runtimes and their features,
// cgroup mode, default bounds, GPUs and CDI devices.
#include "common/error.h"
#include "engine/engine.h"
#include "gpu/cdi.h"
#include "runtime/backends.h"
#include "runtime/default_bounds.h"
#include "runtime/linux/sandbox_network.h"
#include "runtime/linux/cgroup_tune.h"

namespace sbx::engine {

HostInfo Engine::host_info(const std::string& runsc, const std::string& gpu_host_root) {
  HostInfo h;
  h.cgroup_mode = runtime::cgroup_mode_name();
  if (auto m = runtime::cgroup2_mount()) {
    h.cgroup2_mount = m->path;
    h.favordynmods = m->favordynmods;
  }
  h.default_bounds = runtime::describe_default_bounds();
  h.runtimes = runtime::probe_runtimes(runsc);
  h.network = runtime::network_support();
  gpu::HostRoot root{gpu_host_root};
  try {
    h.nvidia = gpu::nvidia_present(root);
    if (h.nvidia) {
      gpu::DiscoverOptions d;
      d.root = root;
      h.gpus = gpu::discover_nvidia(d);
    }
  } catch (const Error& e) {
    h.gpu_error = e.what();
  }
  auto reg = gpu::CdiRegistry::load(root);
  h.cdi_devices = reg.device_names();
  h.cdi_errors = reg.errors();
  return h;
}

bool Engine::set_favordynmods(bool on) { return runtime::set_favordynmods(on); }

}  // namespace sbx::engine
