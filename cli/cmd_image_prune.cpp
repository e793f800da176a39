// sbx image prune: removes the build cache and images without a name that
// no sandbox uses (engine::Engine::prune_images).
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/units.h"

namespace sbx::cli {

void register_image_prune_command(CLI::App& app, Globals& g, Action& action) {
  struct Flags {
    bool cache_only = false, json = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* image = app.add_subcommand("image", "Image maintenance (see 'sbx image prune --help')");
  image->require_subcommand(1);
  CLI::App* cmd = image->add_subcommand(
      "prune", "Remove the build cache and untagged images no sandbox uses, and the layers only they held");
  cmd->add_flag("--build-cache", f->cache_only, "Remove only the build cache (the steps of 'sbx build')");
  cmd->add_flag("--json", f->json, "Print JSON");
  cmd->callback([f, &g, &action] {
    action = [f, &g] {
      auto r = make_engine(g).prune_images(!f->cache_only);
      if (f->json) {
        std::cout << nlohmann::json{{"Deleted", r.deleted}, {"BuildCache", r.build_cache},
                                    {"SpaceReclaimed", r.reclaimed}}
                         .dump(2)
                  << "\n";
        return 0;
      }
      for (const auto& id : r.deleted) std::cout << "Deleted: " << id << "\n";
      std::cout << "Removed " << r.deleted.size() << " image(s), " << r.build_cache << " of them build cache\n"
                << "Total reclaimed space: " << units::format_size_si(r.reclaimed) << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
