// The CLI's command registry. Each cli/cmd_*.cpp adds one subcommand (or a few
// closely related ones) and stays thin: parse flags, build a request or a
// SandboxSpec, call the engine (engine/engine.h), print. Only cli/ prints and
// picks exit codes.
#pragma once
#include <functional>
#include <string>

#include "engine/engine.h"

namespace CLI {
class App;
}

namespace sbx::oci {
struct PullEvent;
}

namespace sbx::cli {

/// Options every command shares.
struct Globals {
  std::string root = "/var/lib/sbx";  ///< image store (--root)
  std::string run_root = "/run/sbx";  ///< live sandbox state (--run-root)
  std::string log_level = "warn";
  bool json = false;
};

/// The engine over the global options' directories.
inline engine::Engine make_engine(const Globals& g) { return engine::Engine({g.root, g.run_root}); }

/// What to run once the command line is parsed; returns the process exit code.
using Action = std::function<int()>;

/// Each register_* adds its subcommand(s) to `app`; the subcommand's callback
/// stores the work to do in `action` (run after parsing, so errors of the
/// library are reported by main in one place).
/// Images: import, images, tag, rmi (one file each, cli/cmd_VERB.cpp).
void register_import_command(CLI::App& app, Globals& g, Action& action);
void register_images_command(CLI::App& app, Globals& g, Action& action);
void register_tag_command(CLI::App& app, Globals& g, Action& action);
void register_rmi_command(CLI::App& app, Globals& g, Action& action);
void register_run_command(CLI::App& app, Globals& g, Action& action);
void register_info_command(CLI::App& app, Globals& g, Action& action);
void register_gc_command(CLI::App& app, Globals& g, Action& action);
/// Long-lived sandboxes: exec, ps, inspect, wait, stop, kill, rm, logs, cp.
void register_exec_command(CLI::App& app, Globals& g, Action& action);
void register_ps_command(CLI::App& app, Globals& g, Action& action);
void register_inspect_command(CLI::App& app, Globals& g, Action& action);
void register_wait_command(CLI::App& app, Globals& g, Action& action);
void register_stop_command(CLI::App& app, Globals& g, Action& action);
void register_kill_command(CLI::App& app, Globals& g, Action& action);
void register_rm_command(CLI::App& app, Globals& g, Action& action);
void register_logs_command(CLI::App& app, Globals& g, Action& action);
void register_cp_command(CLI::App& app, Globals& g, Action& action);
/// sbx create (cli/cmd_create.cpp).
void register_create_command(CLI::App& app, Globals& g, Action& action);
/// Snapshots: snapshot, export, snapshot-dir, snapshots (rm, extract, prune), checkpoint, restore.
void register_snapshot_command(CLI::App& app, Globals& g, Action& action);
void register_export_command(CLI::App& app, Globals& g, Action& action);
void register_snapshot_dir_command(CLI::App& app, Globals& g, Action& action);
void register_snapshots_command(CLI::App& app, Globals& g, Action& action);
void register_checkpoint_command(CLI::App& app, Globals& g, Action& action);
void register_restore_command(CLI::App& app, Globals& g, Action& action);
/// Registries: pull, push, login, logout (shared flags: cli/registry_flags.h).
void register_pull_command(CLI::App& app, Globals& g, Action& action);
void register_push_command(CLI::App& app, Globals& g, Action& action);
void register_login_command(CLI::App& app, Globals& g, Action& action);
void register_logout_command(CLI::App& app, Globals& g, Action& action);
/// serve: the Docker Engine API (cli/cmd_serve.cpp, server/).
void register_serve_command(CLI::App& app, Globals& g, Action& action);
/// sbx stats (cli/cmd_stats.cpp).
void register_stats_command(CLI::App& app, Globals& g, Action& action);
/// sbx batch (cli/cmd_batch.cpp).
void register_batch_command(CLI::App& app, Globals& g, Action& action);
/// sbx system tune, sbx system df (cli/cmd_system.cpp).
void register_system_command(CLI::App& app, Globals& g, Action& action);
/// sbx build (cli/cmd_build.cpp).
void register_build_command(CLI::App& app, Globals& g, Action& action);
/// sbx history (cli/cmd_history.cpp).
void register_history_command(CLI::App& app, Globals& g, Action& action);
/// sbx image prune (cli/cmd_image_prune.cpp).
void register_image_prune_command(CLI::App& app, Globals& g, Action& action);
/// sbx network create|ls|inspect|rm|prune|connect|disconnect (cli/cmd_network.cpp).
void register_network_command(CLI::App& app, Globals& g, Action& action);

/// sbx volume create|ls|inspect|rm|prune (cli/cmd_volume.cpp).
void register_volume_command(CLI::App& app, Globals& g, Action& action);

/// A pull/push progress printer for stderr: per-blob lines redrawn on a
/// terminal, plain lines otherwise, JSON lines with `json`, nothing with `quiet`.
using PullPrinter = std::function<void(const oci::PullEvent&)>;
PullPrinter make_pull_printer(bool quiet, bool json);

/// sbx-runc: the OCI runtime command line (cli/cmd_runc.cpp), chosen by
/// main() when argv[0]'s base name is "sbx-runc". Returns the exit code.
int runc_main(int argc, char** argv);

}  // namespace sbx::cli
