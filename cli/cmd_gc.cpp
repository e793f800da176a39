// sbx gc: one command that removes everything nothing refers to any more:
// what killed sandboxes left behind (state dirs, empty sbx-* cgroups, id
// ranges, snapshot copies) first, then image blobs and layers no image or live
// sandbox uses; with --older-than, also snapshots not used for that long.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "common/units.h"
#include "snapshot/catalog.h"

namespace sbx::cli {

void register_gc_command(CLI::App& app, Globals& g, Action& action) {
  auto* cmd = app.add_subcommand("gc", "Remove leftovers of killed sandboxes, unreferenced image blobs and layers, old snapshots");
  auto older_than = std::make_shared<std::string>();
  cmd->add_option("--older-than", *older_than,
                  "Also remove snapshots (all kinds) not used for this long, e.g. 7d, 12h");
  cmd->callback([&, older_than] {
    action = [&, older_than] {
      // Parse first: a bad value must not leave half the work done.
      int64_t age_s = older_than->empty() ? -1 : snapshot::parse_age_seconds(*older_than);
      engine::GcResult res = make_engine(g).gc(age_s);
      for (const auto& p : res.removed) std::cout << "removed " << p << "\n";
      for (const auto& r : res.snapshots) std::cout << "removed snapshot " << r.name << " (" << r.kind << ")\n";
      const oci::GcResult& r = res.store;
      std::cout << "Removed " << r.blobs << " blobs (" << units::format_size(r.bytes) << "), " << r.layers
                << " layers, " << r.temps << " temp dirs, " << r.images << " hidden images\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
