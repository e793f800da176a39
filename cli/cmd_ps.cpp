// sbx ps (list): the sandboxes, as a table, JSON or a --format template. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/sandbox_view.h"
#include "engine/list_status.h"

namespace sbx::cli {

using nlohmann::json;

void register_ps_command(CLI::App& app, Globals& g, Action& action) {
  struct PsFlags {
    bool all = false, quiet = false, json = false, no_trunc = false;
    std::vector<std::string> filters;
    std::string format;  ///< --format: "json" or a template of {{.Field}}s (format_sandbox)
  };
  auto f = std::make_shared<PsFlags>();
  CLI::App* cmd = app.add_subcommand("ps", "List sandboxes (running ones; -a for all)");
  cmd->alias("list");
  cmd->add_flag("-a,--all", f->all, "Show every sandbox, not only running ones");
  cmd->add_flag("-q,--quiet", f->quiet, "Print ids only");
  cmd->add_flag("--json", f->json, "Print JSON");
  cmd->add_flag("--no-trunc", f->no_trunc, "Print full ids");
  cmd->add_option("-f,--filter", f->filters, "label=KEY[=VALUE], name=NAME, status=STATUS, id=PREFIX")->allow_extra_args(false);
  cmd->add_option("--format", f->format,
                  "json, or a line per sandbox from {{.ID}} {{.Names}} {{.Image}} {{.Status}} {{.Command}} {{.CpuMs}} "
                  "{{.MaxRssBytes}} {{.IoReadBytes}} {{.IoWriteBytes}} {{.DurationMs}} (\\t: tab)");
  cmd->callback([f, &g, &action] {
    action = [f, &g] {
      // The table and -q show no resource usage: read each sandbox's status
      // only (a few files each; thousands of sandboxes list in well under a
      // second). JSON and templates may show usage: the full inspect.
      const bool usage = f->json || !f->format.empty();
      auto infos = usage ? list(g, f->all, f->filters) : engine::list_status(make_engine(g), {f->all, f->filters});
      if (!f->format.empty() && f->format != "json") {
        for (const auto& i : infos) std::cout << format_sandbox(f->format, i, f->no_trunc) << "\n";
        return 0;
      }
      if (f->json || f->format == "json") {
        json arr = json::array();
        for (const auto& i : infos) arr.push_back(info_json(i, false, g.root));
        std::cout << arr.dump(2) << "\n";
        return 0;
      }
      if (f->quiet) {
        for (const auto& i : infos) std::cout << (f->no_trunc ? i.state.id : i.state.id.substr(0, 12)) << "\n";
        return 0;
      }
      // Columns as wide as their longest cell (as docker's tabwriter):
      // a long STATUS ("Exited (124) timeout 5 seconds ago") never
      // pushes NAMES out of line.
      std::vector<std::vector<std::string>> rows = {{"SANDBOX ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "NAMES"}};
      for (const auto& i : infos) {
        std::string cmdline;
        for (const auto& a : i.state.command) cmdline += (cmdline.empty() ? "" : " ") + a;
        if (!f->no_trunc && cmdline.size() > 20) cmdline = cmdline.substr(0, 17) + "...";
        std::string image = i.state.image_ref;
        if (!f->no_trunc && image.size() > 24) image = image.substr(0, 21) + "...";
        rows.push_back({f->no_trunc ? i.state.id : i.state.id.substr(0, 12), image, cmdline, ago(i.state.created_ms),
                        status_text(i), i.state.name});
      }
      print_table(rows);
      return 0;
    };
  });
}

}  // namespace sbx::cli
