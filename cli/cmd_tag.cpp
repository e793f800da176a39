// sbx tag: another name for an image (engine/engine.h).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace sbx::cli {

void register_tag_command(CLI::App& app, Globals& g, Action& action) {
  // sbx tag IMAGE NAME
  auto* cmd = app.add_subcommand("tag", "Give an image another name");
  static std::string ref, name;
  cmd->add_option("IMAGE", ref, "Image name, id or id prefix")->required();
  cmd->add_option("NAME", name, "New name: repository[:tag]")->required();
  cmd->callback([&] {
    action = [&] {
      make_engine(g).tag_image(ref, name);
      return 0;
    };
  });
}

}  // namespace sbx::cli
