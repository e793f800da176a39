// sbx pull: an image from a registry into the store (oci/pull.h does the work).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/registry_flags.h"

namespace sbx::cli {

void register_pull_command(CLI::App& app, Globals& g, Action& action) {
  // sbx pull [--platform P] [-q] [--json] REF
  auto* cmd = app.add_subcommand("pull", "Pull an image from a registry into the store");
  static std::string ref, platform, conf = oci::default_registries_conf();
  static bool quiet = false;
  static int jobs = 3;
  static RegistryFlags rf;
  cmd->add_option("IMAGE", ref, "Image reference: [REGISTRY/]REPOSITORY[:TAG|@DIGEST] (docker.io when no registry)")
      ->required();
  cmd->add_option("--platform", platform, "os/arch[/variant] to pick from a multi-platform image (default: the host's)");
  cmd->add_flag("-q,--quiet", quiet, "No progress output; print only the image id");
  cmd->add_flag("--json", g.json, "Progress as JSON lines on stderr (one event a line)");
  cmd->add_option("--registries-conf", conf,
                  "registries.conf: search registries for short names, insecure/blocked registries, mirrors (default: $CONTAINERS_REGISTRIES_CONF, else /etc/containers/registries.conf)")
      ->capture_default_str();
  cmd->add_option("--jobs", jobs, "Blobs to download at once")->capture_default_str()->check(CLI::Range(1, 16));
  add_registry_flags(cmd, rf);
  cmd->callback([&] {
    action = [&] {
      oci::PullOptions o;
      o.registry = registry_options(rf);
      o.platform = platform;
      o.jobs = jobs;
      o.registries_conf = conf;
      o.progress = make_pull_printer(quiet, g.json);
      oci::ImageRecord rec = make_engine(g).pull(ref, o);
      std::cout << rec.id << "\n";
      return 0;
    };
  });
}

}  // namespace sbx::cli
