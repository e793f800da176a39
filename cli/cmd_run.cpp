// sbx run: start a throw-away sandbox, wait for it, clean up (engine::Engine::run).
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/usage.h"
#include "cli/sandbox_flags.h"
#include "cli/gpu_options.h"
#include "common/error.h"
#include "common/units.h"
#include "engine/engine.h"
#include "runtime/default_bounds.h"
#include "runtime/state.h"

namespace sbx::cli {

namespace {

struct RunFlags {
  SandboxFlags sandbox;  ///< the options run shares with create
  std::vector<std::string> mount_snapshots;
  bool interactive = false, tty = false, rm = false;
  GpuOptions gpu;
  std::string end_record;  ///< --end-record FILE
};

const char* kExitCodes =
    "Exit status:\n"
    "  N        the command's own exit code\n"
    "  124      --timeout fired; the sandbox was killed (\"sbx: sandbox killed: timeout after …\")\n"
    "  125      sbx itself failed (bad option, missing image, setup error)\n"
    "  126      the command was found but could not be executed\n"
    "  127      the command was not found in the sandbox\n"
    "  128+N    the command was killed by signal N\n"
    "  137      also: the OOM killer killed the command (\"sbx: sandbox killed: out of memory …\")\n";

int run_sandbox(const Globals& g, RunFlags& f, runtime::ExitStatus& st);

/// --end-record FILE: the authoritative end reason, beside the exit code
/// (runtime/state.h write_end_record_json); "failed" when sbx itself failed.
int run(const Globals& g, RunFlags& f) {
  runtime::ExitStatus st;
  int code;
  try {
    code = run_sandbox(g, f, st);
  } catch (const Error& e) {
    if (!f.end_record.empty())
      runtime::write_end_record_json(f.end_record, runtime::EndRecord{"failed", e.exit_code(), 0, 0});
    throw;
  }
  if (!f.end_record.empty())
    runtime::write_end_record_json(f.end_record, runtime::EndRecord{runtime::end_reason(st), runtime::reported_exit_code(st), st.signal, 0},
                                   st.oom_kills, st.pids_max_hits, st.usage);
  return code;
}

int run_sandbox(const Globals& g, RunFlags& f, runtime::ExitStatus& st) {
  BuildOptions bo;
  bo.command = "run";
  bo.terminal = f.tty;
  bo.stdin_open = f.interactive;
  bo.gpus = f.gpu.gpus;
  bo.devices = f.gpu.devices;
  bo.gpu_host_root = f.gpu.host_root;
  bo.mount_snapshots = f.mount_snapshots;
  // Root inside is not root on the host: a user namespace by default (native).
  engine::RunRequest req = build_request(g, f.sandbox, bo);
  st = make_engine(g).run(req).status;
  if (st.timed_out) {
    std::cerr << "sbx: sandbox killed: timeout after " << f.sandbox.timeout << "\n";
    return kExitTimeout;
  }
  if (st.oom_killed) {
    const std::string& memory = f.sandbox.memory;
    const std::string limit =
        memory.empty() ? units::format_size(static_cast<uint64_t>(runtime::default_bounds().memory_bytes)) + ", the default"
                       : memory;
    std::cerr << "sbx: sandbox killed: out of memory (--memory " << limit << ")\n";
    return kExitOom;
  }
  if (st.oom_kills > 0)
    std::cerr << "sbx: warning: the OOM killer killed " << st.oom_kills << " process(es) in the sandbox\n";
  if (st.pids_max_hits > 0)
    std::cerr << "sbx: warning: " << st.pids_max_hits << " fork(s) failed at the pids limit ("
              << f.sandbox.pids_limit << ")\n";
  return st.exit_code;
}

}  // namespace

void register_run_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* run_cmd = app.add_subcommand("run", "Run a command in a new, throw-away sandbox");
  std::string bounds = "\nDefault bounds on this host (raise them with the options named; see also 'sbx info'):\n";
  for (const auto& [what, value] : runtime::describe_default_bounds()) bounds += "  " + what + ": " + value + "\n";
  set_usage(*run_cmd, {"sbx run [OPTIONS] IMAGE [--] [COMMAND [ARG...]]", "sbx run [OPTIONS] --rootfs DIR [--] COMMAND [ARG...]"});
  run_cmd->footer(std::string(kExitCodes) + bounds);
  SandboxHelp help;
  help.image = "Image to run (name[:tag], id) — or, with --rootfs, the command";
  help.memory = "Memory limit (e.g. 256m; default: see Default bounds below); an OOM kill exits 137";
  help.timeout = "Kill the sandbox after this long (10s, 1m30s); exits 124";
  help.name = "A name for the sandbox";
  add_sandbox_options(app, *run_cmd, std::shared_ptr<SandboxFlags>(f, &f->sandbox), help);
  run_cmd->add_option("--mount-snapshot", f->mount_snapshots,
                      "Mount a writable copy of directory snapshot NAME at TARGET (NAME:/TARGET)")
      ->allow_extra_args(false);
  run_cmd->add_flag("-i,--interactive", f->interactive, "Keep stdin open (otherwise it is /dev/null)");
  run_cmd->add_flag("-t,--tty", f->tty, "Allocate a pseudo-terminal");
  add_gpu_options(*run_cmd, f->gpu);
  run_cmd->add_option("--end-record", f->end_record,
                      "Write how the sandbox ended as JSON to FILE (Reason: exit, signal, timeout, oom, failed; "
                      "ExitCode, Signal, OomKills): the authoritative reason, which the workload cannot fake")
      ->type_name("FILE");
  run_cmd->add_flag("--rm", f->rm, "Accepted for docker compatibility (sandboxes of sbx run are always removed)");
  run_cmd->callback([f, run_cmd, &g, &action] {
    finish_command_line(*run_cmd, f->sandbox);
    action = [f, &g] { return run(g, *f); };
  });
}

}  // namespace sbx::cli
