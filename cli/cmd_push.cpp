// sbx push: an image of the store to a registry (oci/push.h does the work).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/registry_flags.h"

namespace sbx::cli {

void register_push_command(CLI::App& app, Globals& g, Action& action) {
  // sbx push IMAGE [DEST]
  auto* cmd = app.add_subcommand("push", "Push an image of the store (snapshots too) to a registry");
  static std::string image, dest;
  static bool quiet = false;
  static RegistryFlags rf;
  cmd->add_option("IMAGE", image, "Image in the store (name, id or snapshot image)")->required();
  cmd->add_option("DEST", dest, "Where to: REGISTRY/REPOSITORY[:TAG] (default: IMAGE's own name)");
  cmd->add_flag("-q,--quiet", quiet, "No progress output");
  cmd->add_flag("--json", g.json, "Progress as JSON lines on stderr");
  add_registry_flags(cmd, rf);
  cmd->callback([&] {
    action = [&] {
      oci::PushOptions o;
      o.registry = registry_options(rf);
      o.progress = make_pull_printer(quiet, g.json);
      std::string digest = make_engine(g).push(image, dest, o);
      std::cout << digest << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
