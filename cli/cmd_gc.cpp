// sbx gc: one command that removes everything nothing refers to any more:
// what killed sandboxes left behind (state dirs, empty sbx-* cgroups) first,
// then image blobs and layers no image or live sandbox uses.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "common/units.h"
#include "oci/store.h"
#include "runtime/state.h"

namespace sbx::cli {

void register_gc_command(CLI::App& app, Globals& g, Action& action) {
  auto* cmd = app.add_subcommand("gc", "Remove leftovers of killed sandboxes and unreferenced image blobs and layers");
  cmd->callback([&] {
    action = [&] {
      for (const auto& p : runtime::gc(g.run_root)) std::cout << "removed " << p << "\n";
      oci::GcResult r = oci::Store(g.root).gc(g.run_root);
      std::cout << "Removed " << r.blobs << " blobs (" << units::format_size(r.bytes) << "), " << r.layers
                << " layers, " << r.temps << " temp dirs, " << r.images << " hidden images\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
