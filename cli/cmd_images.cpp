// sbx images: the images in the store (engine/engine.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/units.h"

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

}  // namespace

void register_images_command(CLI::App& app, Globals& g, Action& action) {
  // sbx images
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

}  // namespace sbx::cli
