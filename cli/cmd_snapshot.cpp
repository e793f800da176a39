// sbx snapshot: a sandbox's file system changes as a new image (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"

namespace sbx::cli {

void register_snapshot_command(CLI::App& app, Globals& g, Action& action) {
  // sbx snapshot ID [--name NAME[:TAG]]  |  sbx snapshot --upper DIR --image IMAGE
  auto* cmd = app.add_subcommand("snapshot", "Save a sandbox's file system changes as a new image (one layer on its image)");
  static std::string id, name, upper, image;
  cmd->add_option("ID", id, "Sandbox id or name");
  cmd->add_option("--name", name, "Name for the new image: repository[:tag]");
  cmd->add_option("--upper", upper, "Instead of a sandbox: commit this overlay upper dir ...");
  cmd->add_option("--image", image, "... on top of this image (with --upper)");
  cmd->callback([&] {
    action = [&] {
      engine::FsSnapshotRequest req;
      req.sandbox = id;
      req.upper_dir = upper;
      req.parent_image = image;
      req.name = name;
      auto res = make_engine(g).snapshot_fs(req);
      std::cout << res.image.id << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
