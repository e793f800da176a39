// sbx rm: removes sandboxes (-f: running ones too; -a/--filter: many; -v: their anonymous volumes). Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/sandbox_view.h"
#include "common/error.h"
#include "engine/engine.h"

namespace sbx::cli {

void register_rm_command(CLI::App& app, Globals& g, Action& action) {
  struct RmFlags {
    std::vector<std::string> refs, filters;
    bool force = false, all = false, volumes = false;
  };
  auto f = std::make_shared<RmFlags>();
  CLI::App* cmd = app.add_subcommand("rm", "Remove sandboxes (-f: also running ones)");
  cmd->add_option("SANDBOX", f->refs, "Sandbox ids, id prefixes or names");
  cmd->add_flag("-f,--force", f->force, "Kill running sandboxes first");
  cmd->add_flag("-a,--all", f->all, "Remove every sandbox (with --filter: every matching one)");
  cmd->add_flag("-v,--volumes", f->volumes, "Also remove the sandboxes' anonymous volumes (their image's VOLUMEs)");
  cmd->add_option("--filter", f->filters, "label=KEY[=VALUE], name=, status=, id=")->allow_extra_args(false);
  cmd->callback([f, &g, &action] {
    action = [f, &g] {
      auto eng = make_engine(g);
      std::vector<std::string> ids;
      if (f->all || !f->filters.empty()) {
        for (const auto& i : list(g, true, f->filters)) ids.push_back(i.state.id);
      } else if (f->refs.empty()) {
        throw Error("sbx rm: give sandbox ids or names, --all, or --filter");
      }
      int rc = 0;
      for (const auto& r : f->refs) {
        try {
          ids.push_back(eng.resolve(r));
        } catch (const Error& e) {
          std::cerr << "sbx: error: " << e.what() << "\n";
          rc = e.exit_code();
        }
      }
      for (const auto& id : ids) {
        try {
          eng.remove(id, engine::RemoveRequest{f->force, f->volumes});
          std::cout << id << "\n";
        } catch (const Error& e) {
          std::cerr << "sbx: error: " << e.what() << "\n";
          rc = e.exit_code();
        }
      }
      return rc;
    };
  });
}

}  // namespace sbx::cli
