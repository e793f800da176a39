// sbx inspect: sandboxes (and images) as JSON. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/sandbox_view.h"
#include "common/error.h"

namespace sbx::cli {
namespace {

/// Prints an image's config and layers (pretty JSON: Id, RepoTags, Config,
/// RootFS, Layers, LayerDirs) to stdout and returns 0. Throws sbx::Error when
/// `ref` names no image in g.root.
int inspect_image(const Globals& g, const std::string& ref) {
  std::cout << make_engine(g).inspect_image(ref) << "\n";
  return 0;
}

}  // namespace

using nlohmann::json;

// One `inspect` for sandboxes and images, as podman's: a sandbox id, prefix
// or name first, else an image (cli/images.h).
void register_inspect_command(CLI::App& app, Globals& g, Action& action) {
  auto refs = std::make_shared<std::vector<std::string>>();
  auto fmt_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("inspect", "Show everything about sandboxes or images (JSON)");
  cmd->add_option("NAME", *refs, "Sandbox ids, id prefixes or names; or an image")->required();
  cmd->add_flag("--json", *fmt_json, "Print JSON (the default and only format)");
  cmd->callback([refs, &g, &action] {
    action = [refs, &g] {
      auto eng = make_engine(g);
      std::vector<std::string> ids;
      for (const auto& r : *refs) {
        try {
          ids.push_back(eng.resolve(r));
        } catch (const Error&) {
          if (refs->size() == 1) return inspect_image(g, r);
          throw;
        }
      }
      json arr = json::array();
      for (const auto& id : ids)
        arr.push_back(info_json(eng.inspect(id), true, g.root));
      std::cout << arr.dump(2) << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
