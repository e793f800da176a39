// Image commands: import, images, inspect, tag, rmi (engine/engine.h).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/images.h"
#include "common/error.h"
#include "common/units.h"
#include "oci/store.h"

namespace sbx::cli {
namespace {

using units::format_size_si;  // podman's SI sizes ("5.12 MB")

// "2026-11-22T05:31:21.5Z" -> "3 minutes ago".
std::string human_age(const std::string& rfc3339) {
  std::tm tm{};
  if (rfc3339.empty() || !::strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return "unknown";
  time_t t = ::timegm(&tm);
  long d = static_cast<long>(std::difftime(std::time(nullptr), t));
  auto ago = [](long n, const char* unit) {
    return std::to_string(n) + " " + unit + (n == 1 ? "" : "s") + " ago";
  };
  if (d < 1) return "Less than a second ago";
  if (d < 60) return ago(d, "second");
  if (d < 3600) return ago(d / 60, "minute");
  if (d < 86400) return ago(d / 3600, "hour");
  if (d < 86400 * 30) return ago(d / 86400, "day");
  if (d < 86400 * 365) return ago(d / (86400 * 30), "month");
  return ago(d / (86400 * 365), "year");
}

// One progress line on a terminal, rewritten in place; nothing otherwise.
struct ProgressLine {
  bool tty = ::isatty(2);
  std::string last;
  int last_layer = -1;
  std::chrono::steady_clock::time_point last_time{};
  void operator()(const oci::ImportProgress& p) {
    if (!tty) return;
    std::string s;
    if (p.phase == "unpacking")
      s = "Unpacking layer " + std::to_string(p.layer) + "/" + std::to_string(p.layers) + ": " + format_size_si(p.bytes) +
          " / " + format_size_si(p.total);
    else
      s = (p.phase == "reading" ? "Reading archive: " : "Copying blobs: ") + format_size_si(p.bytes) +
          (p.total ? " / " + format_size_si(p.total) : "");
    // At most ~10 updates a second, but always when the layer changes.
    auto now = std::chrono::steady_clock::now();
    if (s == last || (p.layer == last_layer && now - last_time < std::chrono::milliseconds(100))) return;
    last = s;
    last_layer = p.layer;
    last_time = now;
    std::fprintf(stderr, "\r\033[K%s", s.c_str());
    std::fflush(stderr);
  }
  void done() {
    if (tty && !last.empty()) std::fprintf(stderr, "\r\033[K");
  }
};

}  // namespace

int inspect_image(const Globals& g, const std::string& ref) {
  std::cout << make_engine(g).inspect_image(ref) << "\n";
  return 0;
}

void register_image_commands(CLI::App& app, Globals& g, Action& action) {
  // sbx import PATH [NAME[:TAG]]
  {
    auto* cmd = app.add_subcommand("import", "Import an OCI image layout dir, oci-archive or docker-archive into the store");
    static std::string path, name;
    static bool quiet = false;
    cmd->add_option("PATH", path, "OCI layout directory, oci-archive tar or docker-archive tar")->required();
    cmd->add_option("NAME", name, "Name to give the image: repository[:tag] (default: the name in the archive)");
    cmd->add_flag("-q,--quiet", quiet, "No progress output");
    cmd->callback([&] {
      action = [&] {
        ProgressLine line;
        line.tty = line.tty && !quiet;
        engine::ImportRequest req;
        req.path = path;
        req.name = name;
        req.progress = [&](const oci::ImportProgress& p) { line(p); };
        oci::ImageRecord img;
        try {
          img = make_engine(g).import_image(req);
        } catch (...) {
          line.done();
          throw;
        }
        line.done();
        std::cout << img.id << "\n";
        return 0;
      };
    });
  }
  // sbx images
  {
    auto* cmd = app.add_subcommand("images", "List images in the store");
    static bool quiet = false;
    cmd->add_flag("--json", g.json, "Print JSON");
    cmd->add_flag("-q,--quiet", quiet, "Print image ids only");
    cmd->callback([&] {
      action = [&] {
        auto imgs = make_engine(g).list_images();
        if (g.json) {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& i : imgs)
            arr.push_back({{"Id", i.id},
                           {"RepoTags", i.names},
                           {"Digest", i.manifest_digest},
                           {"Created", i.created},
                           {"Size", i.unpacked_size},
                           {"CompressedSize", i.size},
                           {"Layers", i.chain_ids.size()}});
          std::cout << arr.dump(2) << "\n";
          return 0;
        }
        if (quiet) {
          for (const auto& i : imgs) std::cout << i.id.substr(0, 12) << "\n";
          return 0;
        }
        std::printf("%-40s %-12s %-14s %-20s %s\n", "REPOSITORY", "TAG", "IMAGE ID", "CREATED", "SIZE");
        for (const auto& i : imgs) {
          std::vector<std::string> names = i.names.empty() ? std::vector<std::string>{"<none>:<none>"} : i.names;
          for (const auto& n : names) {
            size_t c = n.rfind(':');
            std::printf("%-40s %-12s %-14s %-20s %s\n", n.substr(0, c).c_str(), n.substr(c + 1).c_str(),
                        i.id.substr(0, 12).c_str(), human_age(i.created).c_str(), format_size_si(i.unpacked_size).c_str());
          }
        }
        return 0;
      };
    });
  }
  // sbx inspect IMAGE
  {
    auto* cmd = app.add_subcommand("inspect", "Show an image's config and layers as JSON");
    static std::string ref;
    cmd->add_option("IMAGE", ref, "Image name, id or id prefix")->required();
    cmd->add_flag("--json", g.json, "Print JSON (the default)");
    cmd->callback([&] { action = [&] { return inspect_image(g, ref); }; });
  }
  // sbx tag IMAGE NAME
  {
    auto* cmd = app.add_subcommand("tag", "Give an image another name");
    static std::string ref, name;
    cmd->add_option("IMAGE", ref, "Image name, id or id prefix")->required();
    cmd->add_option("NAME", name, "New name: repository[:tag]")->required();
    cmd->callback([&] {
      action = [&] {
        make_engine(g).tag_image(ref, name);
        return 0;
      };
    });
  }
  // sbx rmi IMAGE...
  {
    auto* cmd = app.add_subcommand("rmi", "Remove images (refused while a sandbox uses one, unless --force)");
    static std::vector<std::string> refs;
    static bool force = false;
    cmd->add_option("IMAGE", refs, "Image names, ids or id prefixes")->required();
    cmd->add_flag("-f,--force", force, "Remove even when a sandbox uses the image (its layers stay until 'sbx gc')");
    cmd->callback([&] {
      action = [&] {
        auto eng = make_engine(g);
        int rc = 0;
        for (const auto& r : refs) {
          try {
            oci::RemoveResult res = eng.remove_image(r, force);
            for (const auto& u : res.untagged) std::cout << "Untagged: " << u << "\n";
            if (!res.deleted.empty()) std::cout << "Deleted: " << res.deleted << "\n";
          } catch (const Error& e) {
            if (refs.size() == 1) throw;
            std::cerr << "sbx: error: " << e.what() << "\n";
            rc = rc ? rc : e.exit_code();
          }
        }
        return rc;
      };
    });
  }
}

}  // namespace sbx::cli
