// sbx logout: a registry's credentials out of the auth file (oci/auth_config.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "common/error.h"

namespace sbx::cli {

void register_logout_command(CLI::App& app, Globals& g, Action& action) {
  // sbx logout [--all] [REGISTRY]
  auto* cmd = app.add_subcommand("logout", "Remove a registry's credentials from the auth file");
  static std::string registry, authfile;
  static bool all = false;
  cmd->add_option("REGISTRY", registry, "Registry host[:port]");
  cmd->add_flag("-a,--all", all, "Remove the credentials of every registry");
  cmd->add_option("--authfile", authfile, "Credentials file (default: $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json)");
  cmd->callback([&] {
    action = [&] {
      if (registry.empty() && !all) throw Error("sbx logout: name a REGISTRY or use --all");
      std::string reg = make_engine(g).logout(all ? "" : registry, authfile);
      std::cout << (all ? "Removed login credentials for all registries\n" : "Removed login credentials for " + reg + "\n");
      return 0;
    };
  });
}

}  // namespace sbx::cli
