// sbx rename: gives a sandbox another name (engine/rename.h). Thin: parse, call, print nothing.
#include "cli/cmd_rename.h"

#include "engine/rename.h"

namespace sbx::cli {

void register_rename_command(CLI::App& app, Globals& g, Action& action) {
  struct RenameFlags {
    std::string ref, name;
  };
  auto f = std::make_shared<RenameFlags>();
  auto* cmd = app.add_subcommand("rename", "Rename a sandbox (a running one keeps running)");
  cmd->add_option("SANDBOX", f->ref, "Sandbox id, id prefix or name")->required();
  cmd->add_option("NAME", f->name, "New name: [a-zA-Z0-9][a-zA-Z0-9_.-]*, unused by any other sandbox")->required();
  cmd->callback([f, &g, &action] {
    action = [f, &g] {
      auto eng = make_engine(g);
      engine::rename_sandbox(eng, f->ref, f->name);
      return 0;
    };
  });
}

}  // namespace sbx::cli
