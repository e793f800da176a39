// sbx kill: a signal to sandboxes. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/sandbox_view.h"

namespace sbx::cli {

void register_kill_command(CLI::App& app, Globals& g, Action& action) {
  auto refs = std::make_shared<std::vector<std::string>>();
  auto sig = std::make_shared<std::string>("KILL");
  CLI::App* cmd = app.add_subcommand("kill", "Send a signal to sandboxes (default SIGKILL)");
  cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
  cmd->add_option("-s,--signal", *sig, "Signal name or number")->capture_default_str();
  cmd->callback([refs, sig, &g, &action] {
    action = [refs, sig, &g] {
      int n = engine::parse_signal(*sig);
      auto eng = make_engine(g);
      for (const auto& id : resolve_all(g, *refs)) {
        eng.kill(id, n);
        std::cout << id << "\n";
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
