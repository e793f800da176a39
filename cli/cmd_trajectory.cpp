// sbx trajectory show|export: a recorded sandbox's steps (engine/trajectory.h;
// docs/trajectory.md) as a table or JSON, and as one archive with the
// checkpoints it references.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/trajectory_commands.h"
#include "cli/usage.h"
#include "common/error.h"
#include "engine/trajectory_ops.h"

namespace sbx::cli {

namespace {

using json = nlohmann::json;

std::string shorten(std::string s, size_t n) {
  for (auto& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

std::string what_of(const json& s) {
  std::string kind = s.value("kind", "");
  if (kind == "exec") {
    std::string cmd;
    for (const auto& a : s.value("argv", json::array())) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    return cmd;
  }
  if (kind == "cp_in") return "-> " + s.value("path", "");
  if (kind == "cp_out") return "<- " + s.value("path", "");
  if (kind == "snapshot") return s.value("type", "") + " " + s.value("name", s.value("id", ""));
  if (kind == "branch") return "from " + s.value("parent", json::object()).value("trajectory", "") + " at step " +
                               std::to_string(s.value("parent", json::object()).value("at", 0));
  return "";
}

std::string checkpoint_of(const json& s) {
  if (s.contains("not_restorable")) return "not restorable";
  if (!s.contains("checkpoint")) return "-";
  const json& c = s["checkpoint"];
  if (c.is_null()) return "none";
  return std::to_string(c.value("files", json::array()).size()) + " files, " +
         std::to_string(c.value("deleted", json::array()).size()) + " deleted";
}

int show(const Globals& g, const std::string& source, bool as_json) {
  auto engine = make_engine(g);
  engine::trajectory::ScratchDir scratch(g.run_root);
  auto t = engine::trajectory::read(engine, source, scratch.path + "/t");
  if (as_json) {
    std::cout << json{{"header", t.header}, {"steps", t.steps}}.dump(2) << "\n";
    return 0;
  }
  const json& im = t.header.value("image", json::object());
  std::cout << "image " << im.value("ref", "") << " (" << im.value("id", "").substr(0, 19) << "), runtime "
            << t.header.value("runtime", "") << ", sbx " << t.header.value("sbx_version", "") << "\n";
  if (t.header.contains("parent"))
    std::cout << "branched from " << t.header["parent"].value("trajectory", "") << " at step "
              << t.header["parent"].value("at", 0) << "\n";
  std::printf("%-5s %-8s %-40s %5s %9s %8s %8s  %s\n", "STEP", "KIND", "WHAT", "EXIT", "DURATION", "STDOUT", "STDERR",
              "CHECKPOINT");
  for (const auto& s : t.steps) {
    std::string exit = s.contains("exit_code") ? std::to_string(s["exit_code"].get<int>()) : "-";
    std::string dur = s.contains("duration_ms") ? std::to_string(s["duration_ms"].get<int64_t>()) + "ms" : "-";
    auto bytes = [&](const char* k) {
      if (!s.contains(k) || s[k].is_null()) return std::string("-");
      return std::to_string(s[k].value("size", 0ull)) + "B";
    };
    std::printf("%-5d %-8s %-40s %5s %9s %8s %8s  %s\n", s["step"].get<int>(), s.value("kind", "").c_str(),
                shorten(what_of(s), 40).c_str(), exit.c_str(), dur.c_str(), bytes("stdout").c_str(),
                bytes("stderr").c_str(), checkpoint_of(s).c_str());
  }
  return 0;
}

}  // namespace

void register_trajectory_command(CLI::App& app, Globals& g, Action& action) {
  CLI::App* cmd = app.add_subcommand("trajectory", "Show or export a recorded sandbox's trajectory");
  cmd->require_subcommand(1);
  cmd->footer("A sandbox made with 'sbx create --record' keeps every exec, cp and snapshot as a step\n"
              "(docs/trajectory.md). See also 'sbx branch' and 'sbx replay'.");
  {
    auto src = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    CLI::App* c = cmd->add_subcommand("show", "A table of the steps of a recorded sandbox or a trajectory file");
    set_usage(*c, {"sbx trajectory show [OPTIONS] SANDBOX|FILE"});
    c->add_option("SOURCE", *src, "A recorded sandbox (id, prefix, name), a trajectory.jsonl or an export archive")
        ->required();
    c->add_flag("--json", *as_json, "Print the header and the steps as JSON");
    c->callback([src, as_json, &g, &action] { action = [src, as_json, &g] { return show(g, *src, *as_json || g.json); }; });
  }
  {
    auto sb = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    CLI::App* c = cmd->add_subcommand("export", "Write a recorded sandbox's trajectory and its checkpoints as one tar");
    set_usage(*c, {"sbx trajectory export [OPTIONS] SANDBOX -o FILE"});
    c->add_option("SANDBOX", *sb, "A recorded sandbox (id, prefix, name)")->required();
    c->add_option("-o,--output", *out, "The archive to write (replaced atomically)")->required();
    c->callback([sb, out, &g, &action] {
      action = [sb, out, &g] {
        auto engine = make_engine(g);
        uint64_t n = engine::trajectory::export_tar(engine::trajectory::dir_of_sandbox(engine, *sb), *out);
        std::cerr << "wrote " << *out << " (" << n << " bytes)\n";
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
