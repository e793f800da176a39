// --gpus / --device: thin glue from flags to gpu/ (see gpu/nvidia.h, gpu/cdi.h).
#include "cli/gpu_options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <ostream>

#include "common/error.h"
#include "gpu/cdi.h"
#include "gpu/nvidia.h"
#include "gpu/nvproxy.h"
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

void apply_gpu_options(const GpuOptions& o, SandboxSpec& spec) {
  if (o.gpus.empty() && o.devices.empty()) return;
  gpu::HostRoot root{o.host_root};
  SandboxSpec out = spec;  // all-or-nothing
  if (o.gpus == "none" || o.gpus == "void") {
    gpu::apply_gpus({}, {}, root, out);  // docker's "no GPUs": needs no driver
  } else if (!o.gpus.empty()) {
    gpu::DiscoverOptions d;
    d.root = root;
    auto host = gpu::discover_nvidia(d);
    auto selected = gpu::select_gpus(host, o.gpus);
    if (out.runtime == "gvisor" && !selected.empty()) {
      gpu::require_nvproxy(o.runsc);
      out.annotations["dev.sbx.gvisor.nvproxy"] = "true";
    }
    gpu::apply_gpus(host, selected, root, out);
  }
  std::vector<std::string> cdi;
  for (const auto& dev : o.devices) {
    if (gpu::is_cdi_name(dev))
      cdi.push_back(dev);
    else if (!dev.empty() && dev.front() == '/')
      gpu::apply_host_device(dev, root, out);
    else
      throw Error("--device " + dev + ": expected a CDI name (vendor/class=name) or a host device path (/dev/...)");
  }
  if (!cdi.empty()) gpu::CdiRegistry::load(root).apply(cdi, root, out);
  spec = std::move(out);
}

void print_gpu_info(std::ostream& out) {
  gpu::HostRoot root{GpuOptions::default_host_root()};
  out << "gpus:";
  try {
    if (!gpu::nvidia_present(root)) {
      out << " none (no NVIDIA driver: /proc/driver/nvidia/version is missing)\n";
    } else {
      gpu::DiscoverOptions d;
      d.root = root;
      auto h = gpu::discover_nvidia(d);
      out << "\n  driver: " << h.driver_version << "\n";
      for (const auto& g : h.gpus)
        out << "  " << g.index << ": " << g.model << " (" << (g.uuid.empty() ? "no uuid" : g.uuid) << ", "
            << g.bus_location << ", " << g.device_path() << ")\n";
      out << "  libraries: " << h.libraries.size() << " in";
      for (const auto& d : h.library_dirs) out << " " << d;
      out << "\n";
    }
  } catch (const Error& e) {
    out << "\n  error: " << e.what() << "\n";
  }
  auto reg = gpu::CdiRegistry::load(root);
  auto names = reg.device_names();
  out << "cdi devices:" << (names.empty() ? " none\n" : "\n");
  for (const auto& n : names) out << "  " << n << "\n";
  for (const auto& e : reg.errors()) out << "  error: " << e << "\n";
}

}  // namespace sbx::cli
