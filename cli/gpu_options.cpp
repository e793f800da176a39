// --gpus / --device: thin glue from flags to gpu/ (see gpu/nvidia.h, gpu/cdi.h).
#include "cli/gpu_options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <ostream>

#include "common/error.h"
#include "engine/engine.h"
#include "spec/sandbox_spec.h"

namespace sbx::cli {

std::string GpuOptions::default_host_root() {
  const char* e = std::getenv("SBX_GPU_HOST_ROOT");
  return e && *e ? e : "/";
}

void add_gpu_options(CLI::App& cmd, GpuOptions& o) {
  cmd.add_option("--gpus", o.gpus,
                 "NVIDIA GPUs to give the sandbox: all, an index (0), a list (0,1), a GPU UUID, device=0,1 or count=N");
  cmd.add_option("--device", o.devices,
                 "Add a device: a CDI name (nvidia.com/gpu=all, vendor/class=name) or a host node /dev/x[:/dev/y][:rwm]")
      // One value per --device, repeatable: a following positional (IMAGE) must
      // not be swallowed as a second device.
      ->allow_extra_args(false);
}

void print_gpu_info(std::ostream& out, const engine::HostInfo& h) {
  out << "gpus:";
  if (!h.gpu_error.empty()) {
    out << "\n  error: " << h.gpu_error << "\n";
  } else if (!h.nvidia || !h.gpus) {
    out << " none (no NVIDIA driver: /proc/driver/nvidia/version is missing)\n";
  } else {
    out << "\n  driver: " << h.gpus->driver_version << "\n";
    for (const auto& g : h.gpus->gpus)
      out << "  " << g.index << ": " << g.model << " (" << (g.uuid.empty() ? "no uuid" : g.uuid) << ", "
          << g.bus_location << ", " << g.device_path() << ")\n";
    out << "  libraries: " << h.gpus->libraries.size() << " in";
    for (const auto& d : h.gpus->library_dirs) out << " " << d;
    out << "\n";
  }
  out << "cdi devices:" << (h.cdi_devices.empty() ? " none\n" : "\n");
  for (const auto& n : h.cdi_devices) out << "  " << n << "\n";
  for (const auto& e : h.cdi_errors) out << "  error: " << e << "\n";
}

}  // namespace sbx::cli
