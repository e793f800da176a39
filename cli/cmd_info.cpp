// sbx info: what this host offers — which runtimes are usable here and why
// not, the cgroup mode, the store paths, NVIDIA GPUs and CDI devices.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/gpu_options.h"
#include "common/error.h"
#include "engine/engine.h"

namespace sbx::cli {

void register_info_command(CLI::App& app, Globals& g, Action& action) {
  auto* cmd = app.add_subcommand("info", "Show what this host offers: runtimes, cgroup mode, paths, GPUs");
  auto json = std::make_shared<bool>(false);
  auto runsc = std::make_shared<std::string>();
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->add_option("--runsc", *runsc, "Path to the runsc to describe (default: from $PATH)");
  cmd->callback([&, json, runsc] {
    action = [&, json, runsc] {
      const engine::HostInfo h = make_engine(g).host_info(*runsc, GpuOptions::default_host_root());
      if (*json) {
        nlohmann::json j;
        j["version"] = SBX_VERSION;
        j["root"] = g.root;
        j["run_root"] = g.run_root;
        j["cgroup_mode"] = h.cgroup_mode;
        j["network_private"] = h.network;
        j["cgroup2_mount"] = h.cgroup2_mount;
        j["favordynmods"] = h.favordynmods ? nlohmann::json(*h.favordynmods) : nlohmann::json(nullptr);
        for (const auto& [what, value] : h.default_bounds) j["default_bounds"][what] = value;
        for (auto& r : h.runtimes) {
          j["runtimes"][r.name] = {{"usable", r.usable}, {"detail", r.detail}};
          if (!r.features.empty()) j["runtimes"][r.name]["features"] = r.features;
        }
        std::ostringstream gpu;
        print_gpu_info(gpu, h);
        j["gpus"] = gpu.str();
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::cout << "version:     " << SBX_VERSION << "\n"
                << "root:        " << g.root << "\n"
                << "run-root:    " << g.run_root << "\n"
                << "cgroups:     " << h.cgroup_mode << "\n"
                << "network:     private " << h.network << "\n"
                << "favordynmods: "
                << (h.favordynmods ? (*h.favordynmods ? "on" : "off") + std::string(" (cgroup2 at ") + h.cgroup2_mount +
                                         "; 'sbx system tune --favordynmods on|off')"
                                   : std::string("n/a (no cgroup2 mount)"))
                << "\n"
                << "default bounds:\n";
      for (const auto& [what, value] : h.default_bounds)
        std::cout << "  " << what << ": " << value << "\n";
      std::cout << "runtimes:\n";
      for (auto& r : h.runtimes) {
        std::cout << "  " << r.name << ": " << (r.usable ? "usable" : "NOT usable") << " (" << r.detail << ")\n";
      }
      print_gpu_info(std::cout, h);
      return 0;
    };
  });
}

}  // namespace sbx::cli
