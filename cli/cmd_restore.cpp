// sbx restore: sandboxes that continue from a memory snapshot (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace sbx::cli {

void register_restore_command(CLI::App& app, Globals& g, Action& action) {
  // sbx restore NAME [--name NEW] [--count N]
  auto* cmd = app.add_subcommand("restore", "Start sandboxes that continue from a memory snapshot");
  static std::string name, newname, runsc;
  static int count = 1;
  cmd->add_option("NAME", name, "Memory snapshot")->required();
  cmd->add_option("--name", newname, "Name of the new sandbox (with --count: NEW-1, NEW-2, ...)");
  cmd->add_option("--count", count, "Independent copies to start")->capture_default_str();
  cmd->add_option("--runsc", runsc, "Path to runsc");
  cmd->add_flag("--json", g.json, "Print JSON");
  cmd->callback([&] {
    action = [&] {
      engine::RestoreRequest req;
      req.snapshot = name;
      req.name = newname;
      req.count = count;
      req.runsc = runsc;
      auto out = make_engine(g).restore(req);
      if (g.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& s : out) arr.push_back({{"Id", s.id}, {"Pid", s.pid}, {"Output", s.output}, {"RestoreMs", s.restore_ms}});
        std::cout << arr.dump(2) << "\n";
      } else {
        for (const auto& s : out) std::cout << s.id << "\n";
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
