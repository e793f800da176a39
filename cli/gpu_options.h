// `--gpus` and `--device` for the commands that start sandboxes (run, create).
// Kept out of cmd_run.cpp so that one call wires them in; CLI11 stays out of
// this header.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace CLI {
class App;
}

namespace sbx {
namespace spec {
struct SandboxSpec;
}
using spec::SandboxSpec;
}

namespace sbx::cli {

struct GpuOptions {
  std::string gpus;                  ///< --gpus value ("" when not given)
  std::vector<std::string> devices;  ///< --device values, CDI names or host device paths
  /// Where the host's /dev, /proc, /etc are: "/", or $SBX_GPU_HOST_ROOT when
  /// set (tests point it at a fake device tree; see tests/gpu/fake_host_e2e.sh).
  std::string host_root = default_host_root();
  static std::string default_host_root();
};

/// Adds `--gpus` and `--device` (repeatable) to `cmd`, storing into `o`.
void add_gpu_options(CLI::App& cmd, GpuOptions& o);

/// Prints the "gpus:" and "cdi devices:" sections of `sbx info` (human text).
void print_gpu_info(std::ostream& out, const engine::HostInfo& info);

}  // namespace sbx::cli
