// sbx logs: the output of a sandbox's first process. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

namespace sbx::cli {

void register_logs_command(CLI::App& app, Globals& g, Action& action) {
  auto ref = std::make_shared<std::string>();
  auto follow = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("logs", "Print the output of a sandbox's first process");
  cmd->add_option("SANDBOX", *ref, "Sandbox id, id prefix or name")->required();
  cmd->add_flag("-f,--follow", *follow, "Keep printing until the sandbox ends");
  cmd->callback([ref, follow, &g, &action] {
    action = [ref, follow, &g] {
      make_engine(g).logs(*ref, *follow, [](const char* p, size_t n) {
        std::fwrite(p, 1, n, stdout);
        std::fflush(stdout);
      });
      return 0;
    };
  });
}

}  // namespace sbx::cli
