// sbx checkpoint: a running sandbox's memory and file system (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"

namespace sbx::cli {

void register_checkpoint_command(CLI::App& app, Globals& g, Action& action) {
  // sbx checkpoint ID [--name NAME] [--leave-running]
  auto* cmd = app.add_subcommand("checkpoint", "Save a running sandbox's memory and file system (gvisor; native needs CRIU)");
  static std::string id, name, runsc;
  static bool leave = false;
  cmd->add_option("ID", id, "Sandbox id or name")->required();
  cmd->add_option("--name", name, "Snapshot name (default: ckpt-<id>-<random>)");
  cmd->add_flag("--leave-running", leave,
                "Keep the sandbox running: it is resumed from the checkpoint under the same id and name");
  cmd->add_option("--runsc", runsc, "Path to runsc");
  cmd->callback([&] {
    action = [&] {
      engine::CheckpointRequest req;
      req.sandbox = id;
      req.name = name;
      req.leave_running = leave;
      req.runsc = runsc;
      auto rec = make_engine(g).checkpoint(req);
      std::cout << rec.name << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
