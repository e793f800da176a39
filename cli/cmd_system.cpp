// sbx system tune: host-wide settings that make sandboxes start faster, each
// changed only when asked (engine::Engine::set_favordynmods); sbx system df:
// the space images and the build cache take (engine::Engine::disk_usage).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "common/units.h"

namespace sbx::cli {

void register_system_command(CLI::App& app, Globals& g, Action& action) {
  CLI::App* sys = app.add_subcommand("system", "Host-wide settings for sbx (see 'sbx system tune --help')");
  sys->require_subcommand(1);
  struct TuneFlags {
    std::string favordynmods;
    bool json = false;
  };
  auto f = std::make_shared<TuneFlags>();
  CLI::App* tune = sys->add_subcommand("tune", "Show or change host-wide settings that speed up sandbox starts");
  tune->footer(
      "--favordynmods on|off remounts the host's cgroup2 (/sys/fs/cgroup or /sys/fs/cgroup/unified) with or\n"
      "without the kernel's favordynmods option, keeping its other options. With it, moving a process into a\n"
      "cgroup no longer waits for an RCU grace period (measured here: 7-26 ms -> 0.1 ms per sandbox start, and\n"
      "parallel starts stop queueing); the price is a slightly dearer fork and exit for every process on the\n"
      "host. Host-wide and not persistent across reboots (boot parameter: cgroup_favordynmods=1). sbx never\n"
      "changes it by itself. Idempotent; the way back is --favordynmods off (or the state 'sbx info' showed).\n"
      "Without an option: prints the current state.");
  tune->add_option("--favordynmods", f->favordynmods, "on or off")->check(CLI::IsMember({"on", "off"}));
  tune->add_flag("--json", f->json, "Print JSON");
  tune->callback([f, &g, &action] {
    action = [f, &g] {
      auto eng = make_engine(g);
      std::optional<bool> before;
      if (!f->favordynmods.empty()) before = eng.set_favordynmods(f->favordynmods == "on");
      auto h = eng.host_info("", "/");
      if (f->json) {
        nlohmann::json j = {{"cgroup2_mount", h.cgroup2_mount},
                            {"favordynmods", h.favordynmods ? nlohmann::json(*h.favordynmods) : nlohmann::json(nullptr)}};
        // Always present (null when --favordynmods was not given), so a script
        // can read it without testing for the key.
        j["favordynmods_before"] = before ? nlohmann::json(*before) : nlohmann::json(nullptr);
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      if (!h.favordynmods) {
        std::cout << "favordynmods: n/a (no cgroup2 mount)\n";
        return 0;
      }
      std::cout << "favordynmods: " << (*h.favordynmods ? "on" : "off");
      if (before) std::cout << (*before == *h.favordynmods ? " (unchanged)" : (*before ? " (was on)" : " (was off)"));
      std::cout << " (cgroup2 at " << h.cgroup2_mount << ")\n";
      return 0;
    };
  });

  // sbx system df: what the image store holds.
  auto df_json = std::make_shared<bool>(false);
  CLI::App* df = sys->add_subcommand("df", "Show the disk space images, the build cache and volumes take");
  df->add_flag("--json", *df_json, "Print JSON");
  df->callback([df_json, &g, &action] {
    action = [df_json, &g] {
      auto u = make_engine(g).disk_usage();
      if (*df_json) {
        std::cout << nlohmann::json{{"Images", u.images},
                                    {"ImagesSize", u.images_size},
                                    {"ImagesReclaimable", u.images_reclaimable},
                                    {"BuildCache", u.build_cache},
                                    {"BuildCacheSize", u.build_cache_size},
                                    {"Sandboxes", u.sandboxes},
                                    {"Volumes", u.volumes},
                                    {"VolumesSize", u.volumes_size},
                                    {"VolumesReclaimable", u.volumes_reclaimable}}
                         .dump(2)
                  << "\n";
        return 0;
      }
      std::printf("%-14s %-8s %-12s %s\n", "TYPE", "TOTAL", "SIZE", "RECLAIMABLE");
      std::printf("%-14s %-8zu %-12s %s\n", "Images", u.images, units::format_size_si(u.images_size).c_str(),
                  units::format_size_si(u.images_reclaimable).c_str());
      std::printf("%-14s %-8zu %-12s %s\n", "Build Cache", u.build_cache,
                  units::format_size_si(u.build_cache_size).c_str(), units::format_size_si(u.build_cache_size).c_str());
      std::printf("%-14s %-8zu %-12s %s\n", "Sandboxes", u.sandboxes, "-", "-");
      std::printf("%-14s %-8zu %-12s %s\n", "Local Volumes", u.volumes, units::format_size_si(u.volumes_size).c_str(),
                  units::format_size_si(u.volumes_reclaimable).c_str());
      return 0;
    };
  });
}

}  // namespace sbx::cli
