// sbx history IMAGE: the steps an image was made of (its config's history).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/units.h"

namespace sbx::cli {

void register_history_command(CLI::App& app, Globals& g, Action& action) {
  struct Flags {
    std::string image;
    bool no_trunc = false, quiet = false, json = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("history", "Show the history (the steps and their layers) of an image");
  cmd->add_option("IMAGE", f->image, "Image name, id or id prefix")->required();
  cmd->add_flag("--no-trunc", f->no_trunc, "Do not shorten the CREATED BY column");
  cmd->add_flag("-q,--quiet", f->quiet, "Print only the image id");
  cmd->add_flag("--json", f->json, "Print JSON");
  cmd->callback([f, &g, &action] {
    action = [f, &g] {
      auto h = make_engine(g).history(f->image);
      if (f->json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& e : h)
          arr.push_back({{"Id", e.id.empty() ? "<missing>" : e.id},
                         {"Created", e.created},
                         {"CreatedBy", e.created_by},
                         {"Comment", e.comment},
                         {"EmptyLayer", e.empty_layer},
                         {"Size", e.size}});
        std::cout << arr.dump(2) << "\n";
        return 0;
      }
      if (f->quiet) {
        for (const auto& e : h)
          if (!e.id.empty()) std::cout << e.id.substr(0, 12) << "\n";
        return 0;
      }
      std::printf("%-14s %-22s %-50s %-10s %s\n", "IMAGE", "CREATED", "CREATED BY", "SIZE", "COMMENT");
      for (const auto& e : h) {
        std::string by = e.created_by;
        for (auto& c : by)
          if (c == '\n' || c == '\t') c = ' ';
        if (!f->no_trunc && by.size() > 50) by = by.substr(0, 47) + "...";
        std::string created = e.created.substr(0, 19);
        for (auto& c : created)
          if (c == 'T') c = ' ';
        std::printf("%-14s %-22s %-50s %-10s %s\n", e.id.empty() ? "<missing>" : e.id.substr(0, 12).c_str(),
                    created.c_str(), by.c_str(), units::format_size_si(e.size).c_str(), e.comment.c_str());
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
