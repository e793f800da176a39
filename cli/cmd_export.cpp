// sbx export: an image as an oci-archive or docker-archive (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace sbx::cli {

void register_export_command(CLI::App& app, Globals& g, Action& action) {
  // sbx export IMAGE -o FILE [--format oci-archive|docker-archive]
  auto* cmd = app.add_subcommand("export", "Write an image (snapshots too) as an oci-archive or docker-archive");
  static std::string ref, out, format = "oci-archive", name;
  cmd->add_option("IMAGE", ref, "Image name or id")->required();
  cmd->add_option("-o,--output", out, "Archive file to write")->required();
  cmd->add_option("--format", format, "oci-archive or docker-archive")->capture_default_str();
  cmd->add_option("--name", name, "Name to record in the archive (default: the image's name)");
  cmd->callback([&] {
    action = [&] {
      auto r = make_engine(g).export_image(ref, out, format, name);
      if (g.json)
        std::cout << nlohmann::json{{"Id", r.image_id}, {"Digest", r.manifest_digest}, {"Name", r.name}, {"Size", r.bytes}}.dump(2) << "\n";
      else
        std::cout << r.manifest_digest << "\n";
      return 0;
    };
  });
  cmd->add_flag("--json", g.json, "Print JSON");
}

}  // namespace sbx::cli
