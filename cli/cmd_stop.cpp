// sbx stop: SIGTERM, then SIGKILL after --time. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/sandbox_view.h"

namespace sbx::cli {

void register_stop_command(CLI::App& app, Globals& g, Action& action) {
  auto refs = std::make_shared<std::vector<std::string>>();
  auto time_s = std::make_shared<double>(10);
  CLI::App* cmd = app.add_subcommand("stop", "Stop sandboxes: SIGTERM, then SIGKILL after --time");
  cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
  cmd->add_option("-t,--time", *time_s, "Seconds to wait before SIGKILL")->capture_default_str();
  cmd->callback([refs, time_s, &g, &action] {
    action = [refs, time_s, &g] {
      auto eng = make_engine(g);
      for (const auto& id : resolve_all(g, *refs)) {
        eng.stop(id, std::chrono::milliseconds(static_cast<int64_t>(*time_s * 1000)));
        std::cout << id << "\n";
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
