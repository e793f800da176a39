// sbx rmi: remove images (engine/engine.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "oci/store.h"

namespace sbx::cli {

void register_rmi_command(CLI::App& app, Globals& g, Action& action) {
  // sbx rmi IMAGE...
  auto* cmd = app.add_subcommand("rmi", "Remove images (refused while a sandbox uses one, unless --force)");
  static std::vector<std::string> refs;
  static bool force = false;
  cmd->add_option("IMAGE", refs, "Image names, ids or id prefixes")->required();
  cmd->add_flag("-f,--force", force, "Remove even when a sandbox uses the image (its layers stay until 'sbx gc')");
  cmd->callback([&] {
    action = [&] {
      auto eng = make_engine(g);
      int rc = 0;
      for (const auto& r : refs) {
        try {
          oci::RemoveResult res = eng.remove_image(r, force);
          for (const auto& u : res.untagged) std::cout << "Untagged: " << u << "\n";
          if (!res.deleted.empty()) std::cout << "Deleted: " << res.deleted << "\n";
        } catch (const Error& e) {
          if (refs.size() == 1) throw;
          std::cerr << "sbx: error: " << e.what() << "\n";
          rc = rc ? rc : e.exit_code();
        }
      }
      return rc;
    };
  });
}

}  // namespace sbx::cli
