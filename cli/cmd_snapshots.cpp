// sbx snapshots [ls|rm|extract|prune]: the snapshots of every kind (engine/engine.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/units.h"
#include "snapshot/catalog.h"

namespace sbx::cli {
namespace {

using units::format_size_si;  // podman's SI sizes ("5.12 MB")

void print_record_table(const std::vector<snapshot::SnapshotRecord>& recs) {
  std::printf("%-28s %-7s %-10s %-14s %-21s %s\n", "NAME", "KIND", "SIZE", "PARENT", "CREATED", "LAST USED");
  for (const auto& r : recs)
    std::printf("%-28s %-7s %-10s %-14s %-21s %s\n", r.name.c_str(), r.kind.c_str(), format_size_si(r.size).c_str(),
                r.parent.substr(0, 12).c_str(), r.created.c_str(), r.last_used.empty() ? "-" : r.last_used.c_str());
}

nlohmann::json record_json(const snapshot::SnapshotRecord& r) {
  return {{"Name", r.name},     {"Kind", r.kind},       {"Id", r.id},         {"Size", r.size},
          {"Parent", r.parent}, {"Runtime", r.runtime}, {"Source", r.source}, {"Created", r.created},
          {"LastUsed", r.last_used}};
}

}  // namespace

void register_snapshots_command(CLI::App& app, Globals& g, Action& action) {
  // sbx snapshots [--json] | snapshots rm NAME... | snapshots extract NAME DIR | snapshots prune --older-than D
  auto* cmd = app.add_subcommand("snapshots", "List snapshots of every kind (fs, dir, memory)");
  cmd->add_flag("--json", g.json, "Print JSON");
  cmd->callback([&, cmd] {
    if (!cmd->get_subcommands().empty()) return;
    action = [&] {
      auto recs = make_engine(g).list_snapshots();
      if (g.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& r : recs) arr.push_back(record_json(r));
        std::cout << arr.dump(2) << "\n";
      } else {
        print_record_table(recs);
      }
      return 0;
    };
  });
  auto* rm = cmd->add_subcommand("rm", "Remove snapshots (fs snapshots are images: as sbx rmi)");
  static std::vector<std::string> names;
  rm->add_option("NAME", names, "Snapshot names")->required();
  rm->callback([&] {
    action = [&] {
      auto eng = make_engine(g);
      for (const auto& n : names) std::cout << eng.remove_snapshot(n).name << "\n";
      return 0;
    };
  });
  auto* ex = cmd->add_subcommand("extract", "Extract a directory snapshot into a host directory");
  static std::string xname, xdir;
  ex->add_option("NAME", xname, "Directory snapshot")->required();
  ex->add_option("DIR", xdir, "Target directory (created; must be empty)")->required();
  ex->callback([&] {
    action = [&] {
      make_engine(g).extract_snapshot(xname, xdir);
      return 0;
    };
  });
  auto* pr = cmd->add_subcommand("prune", "Remove snapshots not used for longer than --older-than");
  static std::string older;
  pr->add_option("--older-than", older, "Age, e.g. 7d, 12h, 30m")->required();
  pr->callback([&] {
    action = [&] {
      auto removed = make_engine(g).prune_snapshots(snapshot::parse_age_seconds(older));
      for (const auto& r : removed) std::cout << "removed " << r.kind << " snapshot " << r.name << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
