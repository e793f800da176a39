// sbx replay: a trajectory's steps run again in a fresh sandbox and compared
// with the record (engine::Engine::replay). Exit 0: every step matched; 1: a
// step differed (the table says which and where); 125: sbx could not replay.
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

std::string shorten(std::string s, size_t n) {
  for (auto& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

}  // namespace

void register_replay_command(CLI::App& app, Globals& g, Action& action) {
  auto req = std::make_shared<engine::trajectory::ReplayRequest>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("replay", "Run a recorded trajectory again and say where it diverges");
  set_usage(*cmd, {"sbx replay [OPTIONS] FILE|SANDBOX"});
  cmd->footer(
      "Makes a fresh sandbox from the recorded image and spec, runs the recorded execs again (with their\n"
      "stdin) and cp's into the sandbox (with their content), and compares each step's exit code and\n"
      "stdout/stderr digests, then the files the step changed, with the record. Prints a table:\n"
      "'match', or the first difference (the stream, the first differing byte and around it; or the\n"
      "files changed otherwise), and stops there. Timings are never compared.\n"
      "Exit status: 0 all matched, 1 a step differed, 125 the replay could not be made.");
  cmd->add_option("SOURCE", req->source, "A trajectory file, an export archive, or a recorded sandbox")->required();
  cmd->add_option("--image", req->image, "Run it on this image instead of the recorded one");
  cmd->add_option("--until", req->until, "The last step to replay (default: all)");
  cmd->add_flag("--keep", req->keep, "Keep the replay's sandbox (its id is printed)");
  cmd->add_option("--tolerate-regex", req->tolerate_regex,
                  "Do not compare stdout/stderr lines matching this regex (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--tolerate-path", req->tolerate_path,
                  "Do not compare changed files whose path matches this regex (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--json", *as_json, "Print the steps as JSON lines");
  cmd->callback([req, as_json, &g, &action] {
    action = [req, as_json, &g] {
      bool js = *as_json || g.json;
      auto header = std::make_shared<bool>(false);
      req->on_step = [js, header](const engine::trajectory::ReplayStep& s) {
        if (js) {
          std::cout << nlohmann::json{{"step", s.step}, {"kind", s.kind}, {"what", s.what}, {"result", s.result},
                                      {"difference", s.difference}, {"note", s.note}}
                           .dump()
                    << std::endl;
          return;
        }
        if (!*header) std::printf("%-5s %-7s %-40s %s\n", "STEP", "KIND", "WHAT", "RESULT");
        *header = true;
        std::string r = s.result;
        if (!s.difference.empty()) r += ": " + s.difference;
        if (!s.note.empty()) r += " (" + s.note + ")";
        std::printf("%-5d %-7s %-40s %s\n", s.step, s.kind.c_str(), shorten(s.what, 40).c_str(), r.c_str());
        std::fflush(stdout);
      };
      auto engine = make_engine(g);
      auto res = engine::trajectory::replay(engine, *req);
      if (!res.sandbox.empty()) std::cerr << "kept sandbox " << res.sandbox << "\n";
      if (res.first_divergence) {
        std::cerr << "replay diverged at step " << res.first_divergence << "\n";
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace sbx::cli
