// sbx wait: blocks until sandboxes end; prints each one's exit code. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/sandbox_view.h"

namespace sbx::cli {

void register_wait_command(CLI::App& app, Globals& g, Action& action) {
  auto refs = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("wait", "Wait for sandboxes to end; print each one's exit code");
  cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
  cmd->callback([refs, &g, &action] {
    action = [refs, &g] {
      auto eng = make_engine(g);
      for (const auto& id : resolve_all(g, *refs)) {
        auto end = eng.wait(id);
        std::cout << (end ? end->exit_code : -1) << std::endl;
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
