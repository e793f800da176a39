// sbx: entry point. Parses global flags, dispatches to a subcommand, turns
// library errors into a message on stderr and exit code 125.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/cmd_rename.h"
#include "cli/trajectory_commands.h"
#include "cli/report.h"
#include "cli/sandbox_flags.h"
#include "common/error.h"
#include "common/log.h"
#include "runtime/backends.h"

namespace {

/// Levenshtein distance of two short words (a mistyped command name).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// The command (or alias) `word` is most likely a typo of: within two edits,
/// or `word` a prefix of it; empty when none is close.
std::string closest_command(CLI::App& app, const std::string& word) {
  std::string best;
  size_t best_d = 3;
  for (auto* s : app.get_subcommands({})) {
    std::vector<std::string> names{s->get_name()};
    for (const auto& a : s->get_aliases()) names.push_back(a);
    for (const auto& n : names) {
      size_t d = n.rfind(word, 0) == 0 ? 1 : edit_distance(word, n);
      if (d < best_d) best_d = d, best = s->get_name();
    }
  }
  return best;
}

/// An option given more times than it takes (e.g. --root twice), in `app`
/// or the subcommands parsed; nullptr when the parse error is another.
const CLI::Option* repeated_option(CLI::App& app) {
  for (const auto* o : app.get_options())
    if (o->count() > 1 && o->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw &&
        o->get_expected_max() <= 1)
      return o;
  for (auto* s : app.get_subcommands())
    if (const CLI::Option* o = repeated_option(*s)) return o;
  return nullptr;
}

/// Drops the first "--" after the `run` or `create` subcommand in ARGS when
/// the word after it does not start with '-' (see the caller).
void drop_separator_after_image(const CLI::App& app, std::vector<char*>& args) {
  size_t i = 1;
  for (; i < args.size(); ++i) {  // the subcommand: the first word that is no global option or its value
    std::string w = args[i];
    if (w.size() > 1 && w[0] == '-') {
      const CLI::Option* o = w.find('=') == std::string::npos ? app.get_option_no_throw(w) : nullptr;
      if (o && o->get_type_size() != 0) ++i;
      continue;
    }
    if (w != "run" && w != "create") return;
    break;
  }
  for (size_t k = i + 1; k < args.size(); ++k) {
    if (std::string_view(args[k]) != "--") continue;
    if (k + 1 < args.size() && args[k + 1][0] == '-') return;
    args.erase(args.begin() + static_cast<long>(k));
    return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sbx;
  // sbx's own helpers (runtime/linux/self_exec.h) before anything else: they
  // must be non-dumpable again at once and read nothing but their request.
  if (runtime::is_internal_helper(argc, argv)) return runtime::run_internal_helper(argc, argv);
  // One binary, two command lines: installed as "sbx-runc" (a symlink) it is
  // an OCI runtime with runc's command line (cli/cmd_runc.cpp).
  if (argc > 0 && std::string_view(argv[0]).substr(std::string_view(argv[0]).rfind('/') + 1) == "sbx-runc")
    return cli::runc_main(argc, argv);
  cli::Globals g;
  if (const char* e = std::getenv("SBX_ROOT")) g.root = e;
  if (const char* e = std::getenv("SBX_RUN_ROOT")) g.run_root = e;

  CLI::App app{"sbx: run untrusted code in fast, isolated, throw-away sandboxes on one host", "sbx"};
  app.set_version_flag("-v,--version", std::string("sbx version ") + SBX_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--root", g.root, "Image store directory")->envname("SBX_ROOT")->capture_default_str();
  app.add_option("--run-root", g.run_root, "Directory for live sandbox state")->envname("SBX_RUN_ROOT")->capture_default_str();
  app.add_option("--log-level", g.log_level, "Log level: trace, debug, info, warn, error, off")->capture_default_str();

  cli::Action action;
  cli::register_import_command(app, g, action);
  cli::register_images_command(app, g, action);
  cli::register_tag_command(app, g, action);
  cli::register_rmi_command(app, g, action);
  cli::register_run_command(app, g, action);
  cli::register_info_command(app, g, action);
  cli::register_gc_command(app, g, action);
  cli::register_create_command(app, g, action);
  cli::register_exec_command(app, g, action);
  cli::register_ps_command(app, g, action);
  cli::register_inspect_command(app, g, action);
  cli::register_wait_command(app, g, action);
  cli::register_stop_command(app, g, action);
  cli::register_kill_command(app, g, action);
  cli::register_rm_command(app, g, action);
  cli::register_rename_command(app, g, action);
  cli::register_logs_command(app, g, action);
  cli::register_cp_command(app, g, action);
  cli::register_snapshot_command(app, g, action);
  cli::register_export_command(app, g, action);
  cli::register_snapshot_dir_command(app, g, action);
  cli::register_snapshots_command(app, g, action);
  cli::register_checkpoint_command(app, g, action);
  cli::register_restore_command(app, g, action);
  cli::register_pull_command(app, g, action);
  cli::register_push_command(app, g, action);
  cli::register_login_command(app, g, action);
  cli::register_logout_command(app, g, action);
  cli::register_serve_command(app, g, action);
  cli::register_stats_command(app, g, action);
  cli::register_batch_command(app, g, action);
  cli::register_system_command(app, g, action);
  cli::register_build_command(app, g, action);
  cli::register_history_command(app, g, action);
  cli::register_image_prune_command(app, g, action);
  cli::register_network_command(app, g, action);
  cli::register_trajectory_command(app, g, action);
  cli::register_branch_command(app, g, action);
  cli::register_replay_command(app, g, action);
  cli::register_volume_command(app, g, action);

  // CLI11 hands the words after a "--" that follows a subcommand's IMAGE back
  // to the main app, which then takes a command's own "-h" or "-v" as sbx's
  // (`sbx run busybox -- ls -h` printed run's help). run and create take
  // everything after IMAGE verbatim anyway (prefix_command), so that "--"
  // is dropped before parsing — unless the next word starts with '-', which
  // only "--" can keep from being read as an option.
  std::vector<char*> args(argv, argv + argc);
  drop_separator_after_image(app, args);
  cli::set_command_line(std::vector<std::string>(args.begin(), args.end()));
  std::optional<int> parse_exit = cli::parse_command_line(app, [&] { app.parse(static_cast<int>(args.size()), args.data()); }, [&](const CLI::ParseError& e) {
    // The first word that is neither an option nor an option's value should
    // name a command: say so when it does not (CLI11 would only say that one
    // is required), and list them.
    for (int i = 1; i < argc && app.get_subcommands().empty(); ++i) {
      std::string w = argv[i];
      if (w.size() > 1 && w[0] == '-') {
        const CLI::Option* o = w.find('=') == std::string::npos ? app.get_option_no_throw(w) : nullptr;
        if (o && o->get_type_size() != 0) ++i;  // its value follows
        continue;
      }
      if (!app.get_subcommands([&](CLI::App* s) { return s->check_name(w); }).empty()) break;
      std::cerr << "sbx: unknown command '" << w << "'";
      if (std::string near = closest_command(app, w); !near.empty())
        std::cerr << "; did you mean '" << near << "'?";
      std::cerr << "\nCommands:";
      for (const auto* s : app.get_subcommands({})) std::cerr << " " << s->get_name();
      std::cerr << "\nRun 'sbx --help' (or 'sbx COMMAND --help') for usage.\n";
      return static_cast<int>(kExitSbxFailed);
    }
    if (const CLI::Option* o = repeated_option(app)) {
      std::cerr << "sbx: " << o->get_name() << " was given " << o->count() << " times; give it once\n";
      return static_cast<int>(kExitSbxFailed);
    }
    std::cerr << "sbx: " << e.what() << "\nRun 'sbx --help' (or 'sbx COMMAND --help') for usage.\n";
    return static_cast<int>(kExitSbxFailed);
  });
  if (parse_exit) return *parse_exit;
  return cli::run_reporting_errors(
      [&] {
        log::set_level(g.log_level);
        return action ? action() : 0;
      },
      {"sbx", "error: ", {}, kExitSbxFailed, {}});
}
