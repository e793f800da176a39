// sbx snapshot-dir: one directory of a sandbox as a content-addressed snapshot (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "snapshot/catalog.h"

namespace sbx::cli {

void register_snapshot_dir_command(CLI::App& app, Globals& g, Action& action) {
  // sbx snapshot-dir ID PATH [--name NAME]  |  sbx snapshot-dir --host-dir DIR --name NAME
  auto* cmd = app.add_subcommand("snapshot-dir", "Save one directory of a sandbox as a content-addressed snapshot");
  static std::string id, path, name, host_dir;
  cmd->add_option("ID", id, "Sandbox id or name");
  cmd->add_option("PATH", path, "Directory inside the sandbox");
  cmd->add_option("--name", name, "Snapshot name (default: dir-<digest prefix>)");
  cmd->add_option("--host-dir", host_dir, "Instead of a sandbox: capture this host directory");
  cmd->callback([&] {
    action = [&] {
      engine::DirSnapshotRequest req;
      req.sandbox = id;
      req.path = path;
      req.host_dir = host_dir;
      req.name = name;
      snapshot::SnapshotRecord rec = make_engine(g).snapshot_dir(req);
      std::cout << rec.name << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
