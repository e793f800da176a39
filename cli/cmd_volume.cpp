// sbx volume create|ls|inspect|rm|prune: named volumes (engine::Engine::
// create_volume & co.; engine/volumes.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"

namespace sbx::cli {

namespace {

using json = nlohmann::json;

/// KEY=VALUE (or KEY: empty value) → the pair. Throws sbx::Error.
std::pair<std::string, std::string> parse_label(const std::string& text) {
  size_t eq = text.find('=');
  std::string key = text.substr(0, eq);
  if (key.empty()) throw Error(ErrorKind::InvalidArgument, "invalid --label '" + text + "': expected KEY=VALUE");
  return {key, eq == std::string::npos ? "" : text.substr(eq + 1)};
}

/// Runs `one` for each name; errors are printed and the last one's exit code returned.
int for_each_name(const std::vector<std::string>& names, const std::function<void(const std::string&)>& one) {
  int rc = 0;
  for (const auto& n : names) {
    try {
      one(n);
    } catch (const Error& e) {
      std::cerr << "sbx: error: " << e.what() << "\n";
      rc = e.exit_code();
    }
  }
  return rc;
}

}  // namespace

void register_volume_command(CLI::App& app, Globals& g, Action& action) {
  CLI::App* vol = app.add_subcommand("volume", "Manage named volumes (see 'sbx volume --help')");
  vol->require_subcommand(1);
  vol->footer(
      "A named volume is a directory in sbx's store (ROOT/volumes/NAME/_data) that outlives the sandboxes using\n"
      "it; several sandboxes may mount it at once. Mount with 'sbx run|create -v NAME:/PATH[:ro]' or\n"
      "'--mount type=volume,source=NAME,target=/PATH[,readonly]'; an unknown NAME is created, and an empty volume\n"
      "gets a copy of the image's files at /PATH on first use. See sbx-volume(1).");

  // ---- create ----------------------------------------------------------------
  {
    struct Flags {
      engine::VolumeCreateRequest r;
      std::vector<std::string> labels, opts;
      bool json = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = vol->add_subcommand("create", "Create a volume");
    c->add_option("NAME", f->r.name, "Its name, [a-zA-Z0-9][a-zA-Z0-9_.-]+ (default: 64 random hex characters)");
    c->add_option("-l,--label", f->labels, "A label KEY=VALUE (repeatable)")->allow_extra_args(false);
    c->add_option("-d,--driver", f->r.driver, "local (the only one)")->capture_default_str();
    c->add_option("-o,--opt", f->opts,
                  "A driver option KEY=VALUE (repeatable), as docker's local driver: type=tmpfs with "
                  "o=size=64m[,mode=1777] (a tmpfs of that size for each sandbox that mounts it), or type=none "
                  "o=bind[,ro] device=/HOST/DIR (that host directory, as -v /HOST:/PATH)")
        ->allow_extra_args(false);
    c->add_flag("--json", f->json, "Print the volume as JSON (as inspect)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        for (const auto& l : f->labels) f->r.labels.insert(parse_label(l));
        for (const auto& o : f->opts) {
          size_t eq = o.find('=');
          if (eq == 0 || eq == std::string::npos)
            throw Error(ErrorKind::InvalidArgument, "invalid --opt '" + o + "': expected KEY=VALUE");
          f->r.options[o.substr(0, eq)] = o.substr(eq + 1);
        }
        auto v = make_engine(g).create_volume(f->r);
        if (f->json) {
          std::cout << json::parse(v.json()).dump(2) << "\n";
        } else {
          std::cout << v.name << "\n";
        }
        return 0;
      };
    });
  }

  // ---- ls --------------------------------------------------------------------
  {
    struct Flags {
      bool json = false, quiet = false;
      std::vector<std::string> filters;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = vol->add_subcommand("ls", "List volumes");
    c->alias("list");
    c->add_flag("--json", f->json, "Print JSON (an array of inspect objects)");
    c->add_flag("-q,--quiet", f->quiet, "Print names only");
    c->add_option("-f,--filter", f->filters, "name=, label=KEY[=VALUE], dangling=true|false, driver=")
        ->allow_extra_args(false);
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto vols = make_engine(g).list_volumes(f->filters);
        if (f->json) {
          json arr = json::array();
          for (const auto& v : vols) arr.push_back(json::parse(v.json()));
          std::cout << arr.dump(2) << "\n";
          return 0;
        }
        if (f->quiet) {
          for (const auto& v : vols) std::cout << v.name << "\n";
          return 0;
        }
        std::printf("%-8s  %-40s  %s\n", "DRIVER", "VOLUME NAME", "SANDBOXES");
        for (const auto& v : vols) std::printf("%-8s  %-40s  %zu\n", v.driver.c_str(), v.name.c_str(), v.used_by.size());
        return 0;
      };
    });
  }

  // ---- inspect ---------------------------------------------------------------
  {
    struct Flags {
      std::vector<std::string> names;
      bool json = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = vol->add_subcommand("inspect", "Show volumes as JSON (docker's volume inspect)");
    c->add_option("VOLUME", f->names, "Volume names")->required();
    c->add_flag("--json", f->json, "Print JSON (the default; for symmetry with the other commands)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto eng = make_engine(g);
        json arr = json::array();
        int rc = for_each_name(f->names, [&](const std::string& n) { arr.push_back(json::parse(eng.inspect_volume(n).json())); });
        std::cout << arr.dump(2) << "\n";
        return rc;
      };
    });
  }

  // ---- rm --------------------------------------------------------------------
  {
    struct Flags {
      std::vector<std::string> names;
      bool force = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = vol->add_subcommand("rm", "Remove volumes (refused while a sandbox, running or not, uses one)");
    c->alias("remove");
    c->add_option("VOLUME", f->names, "Volume names")->required();
    c->add_flag("-f,--force", f->force, "No error for a volume that does not exist (one in use is still refused)");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto eng = make_engine(g);
        return for_each_name(f->names, [&](const std::string& n) {
          eng.remove_volume(n, f->force);
          std::cout << n << "\n";
        });
      };
    });
  }

  // ---- prune -----------------------------------------------------------------
  {
    struct Flags {
      bool force = false, json = false;
      std::vector<std::string> filters;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* c = vol->add_subcommand("prune", "Remove every volume no sandbox uses");
    c->add_flag("-f,--force", f->force, "Do not ask (sbx never asks; for docker's command lines)");
    c->add_option("--filter", f->filters, "name=, label=KEY[=VALUE], driver=")->allow_extra_args(false);
    c->add_flag("--json", f->json, "Print the removed volumes and the bytes reclaimed as JSON");
    c->callback([f, &g, &action] {
      action = [f, &g] {
        auto r = make_engine(g).prune_volumes(f->filters);
        if (f->json) {
          std::cout << json{{"VolumesDeleted", r.deleted}, {"SpaceReclaimed", r.reclaimed}}.dump() << "\n";
          return 0;
        }
        if (!r.deleted.empty()) {
          std::cout << "Deleted Volumes:\n";
          for (const auto& n : r.deleted) std::cout << n << "\n";
          std::cout << "\n";
        }
        std::cout << "Total reclaimed space: " << r.reclaimed << " bytes\n";
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
