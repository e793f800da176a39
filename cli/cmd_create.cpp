// sbx create: start a detached, long-lived sandbox and print its id
// (engine::Engine::create). Takes sbx run's sandbox options (cli/sandbox_flags.h)
// plus --mount-snapshot, --gpus and --device (as run's), --label and
// --idle-timeout (no exec for that long); --timeout is a hard lifetime.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/gpu_options.h"
#include "cli/usage.h"
#include "cli/sandbox_flags.h"
#include "common/error.h"
#include "common/units.h"
#include "engine/trajectory_ops.h"
#include "runtime/linux/time_namespace.h"

namespace sbx::cli {

namespace {

struct CreateFlags {
  SandboxFlags sandbox;  ///< the options create shares with run
  std::vector<std::string> labels;
  std::vector<std::string> mount_snapshots;
  GpuOptions gpu;
  std::string idle_timeout;
  bool record = false;
  std::vector<std::string> redact;
  bool timens = false, no_timens = false;
};

int create(const Globals& g, const CreateFlags& f) {
  BuildOptions bo;
  bo.command = "create";
  bo.hold_without_command = true;  // a long-lived sandbox is for execs
  bo.mount_snapshots = f.mount_snapshots;
  bo.gpus = f.gpu.gpus;
  bo.devices = f.gpu.devices;
  bo.gpu_host_root = f.gpu.host_root;
  if (!f.idle_timeout.empty()) bo.idle_timeout = units::parse_duration(f.idle_timeout, "--idle-timeout");
  for (const auto& l : f.labels) {
    auto eq = l.find('=');
    if (eq == 0 || l.empty()) throw Error(ErrorKind::InvalidArgument, "invalid --label '" + l + "': use KEY=VALUE");
    bo.labels[l.substr(0, eq)] = eq == std::string::npos ? "" : l.substr(eq + 1);
  }
  engine::SandboxRequest req = build_request(g, f.sandbox, bo);
  if (!f.redact.empty() && !f.record) throw Error(ErrorKind::InvalidArgument, "--redact needs --record");
  // Unset: the default (on with --record: engine::trajectory::pin_reproducible).
  if (f.timens || f.no_timens) req.spec.annotations[runtime::kTimeNamespaceAnnotation] = f.timens ? "true" : "false";
  auto engine = make_engine(g);
  std::cout << (f.record ? engine::trajectory::create_recorded(engine, req, f.redact) : engine.create(req)) << std::endl;
  return 0;
}

}  // namespace

void register_create_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<CreateFlags>();
  CLI::App* cmd = app.add_subcommand("create", "Start a long-lived sandbox in the background and print its id");
  set_usage(*cmd, {"sbx create [OPTIONS] IMAGE [--] [COMMAND [ARG...]]",
                   "sbx create [OPTIONS] --rootfs DIR [--] [COMMAND [ARG...]]"});
  cmd->footer(
      "Without a COMMAND the sandbox just stays alive for 'sbx exec' (the image's Cmd is not run).\n"
      "The first process's output goes to 'sbx logs'. --timeout and --idle-timeout are enforced\n"
      "by the sandbox's own init: they fire even when no sbx process is left.");
  SandboxHelp help;
  help.image = "Image (name[:tag], id) — or, with --rootfs, the command";
  help.memory = "Memory limit (e.g. 256m)";
  help.timeout = "End the sandbox after this long (10s, 1m30s, 2h)";
  help.name = "A name for the sandbox (unique among sandboxes)";
  add_sandbox_options(app, *cmd, std::shared_ptr<SandboxFlags>(f, &f->sandbox), help);
  cmd->add_option("--mount-snapshot", f->mount_snapshots,
                  "Mount a writable copy of directory snapshot NAME at TARGET (NAME:/TARGET); it goes with 'sbx rm'")
      ->allow_extra_args(false);
  add_gpu_options(*cmd, f->gpu);
  cmd->add_option("--idle-timeout", f->idle_timeout, "End the sandbox after this long without an exec");
  cmd->add_option("-l,--label", f->labels, "A label KEY=VALUE (for ps --filter and rm --filter)")->allow_extra_args(false);
  cmd->add_flag("--record", f->record,
                "Keep a trajectory of every exec, cp and snapshot ('sbx trajectory show', 'sbx branch', 'sbx replay')");
  cmd->add_option("--redact", f->redact,
                  "With --record: store this env NAME (or names matching REGEX; 'stdin': stdin) as a digest only")
      ->allow_extra_args(false);
  auto* tn = cmd->add_flag("--timens", f->timens,
                           "Monotonic and boot clocks (and /proc/uptime) that start at 0 with the sandbox (a time "
                           "namespace; default with --record)");
  cmd->add_flag("--no-timens", f->no_timens, "The host's monotonic and boot clocks, also with --record")->excludes(tn);
  cmd->callback([f, cmd, &g, &action] {
    finish_command_line(*cmd, f->sandbox);
    action = [f, &g] { return create(g, *f); };
  });
}

}  // namespace sbx::cli
