// sbx info: what this host offers (version, store paths). Runtimes, cgroup
// mode and CDI devices are added by their modules.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/gpu_options.h"

namespace sbx::cli {

void register_info_command(CLI::App& app, Globals& g, Action& action) {
  auto* cmd = app.add_subcommand("info", "Show what this host offers: runtimes, cgroup mode, paths");
  cmd->add_flag("--json", g.json, "Print JSON");
  cmd->callback([&] {
    action = [&] {
      std::cout << "version: " << SBX_VERSION << "\nroot: " << g.root << "\nrun-root: " << g.run_root << "\n";
      print_gpu_info(std::cout);
      return 0;
    };
  });
}

}  // namespace sbx::cli
