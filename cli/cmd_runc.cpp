// sbx-runc: the OCI runtime command line (runc's), when sbx is run under the
// name "sbx-runc" (a symlink installed next to sbx). Parses runc's global
// flags and commands, calls ocirt/ (the logic), prints, picks exit codes,
// and reports errors as runc does: on stderr and, with --log, as a line in
// the log file (--log-format json: {"level":"error","msg":…,"time":…}, the
// last of which containerd's shim shows).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/error.h"
#include "common/log.h"
#include "ocirt/checkpoint.h"
#include "ocirt/config.h"
#include "ocirt/container.h"
#include "ocirt/gvisor_delegate.h"
#include "ocirt/state_store.h"
#include "runtime/linux/signals.h"

namespace sbx::cli {

namespace {

struct RuncGlobals {
  std::string root = ocirt::kDefaultRoot;
  std::string log_file;
  std::string log_format = "text";
  bool systemd_cgroup = false;
  bool debug = false;
};

void log_line(const RuncGlobals& g, const std::string& level, const std::string& msg) {
  if (g.log_file.empty()) return;
  std::ofstream f(g.log_file, std::ios::app);
  if (!f) return;
  if (g.log_format == "json") {
    f << nlohmann::json{{"level", level}, {"msg", msg}, {"time", ocirt::now_rfc3339()}}.dump() << "\n";
  } else {
    f << "time=\"" << ocirt::now_rfc3339() << "\" level=" << level << " msg=" << nlohmann::json(msg).dump() << "\n";
  }
}

std::string read_all(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream f(path);
  if (!f) throw_errno("open " + path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

int runc_main(int argc, char** argv) {
  RuncGlobals g;
  CLI::App app{"sbx-runc: sbx as an OCI runtime (runc's command line), for podman, containerd and Kubernetes", "sbx-runc"};
  app.set_version_flag("-v,--version", std::string("sbx-runc version ") + SBX_VERSION + "\nspec: 1.0.2");
  app.require_subcommand(1);
  app.fallthrough();
  // SBX_RUNC_ROOT: for callers that cannot pass --root everywhere (podman's
  // cleanup process drops --runtime-flag).
  app.add_option("--root", g.root, "Directory for container state")->envname("SBX_RUNC_ROOT")->capture_default_str();
  app.add_option("--log", g.log_file, "Also write errors to this file");
  app.add_option("--log-format", g.log_format, "Log file format: text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_flag("--systemd-cgroup", g.systemd_cgroup, "Accepted; sbx-runc manages cgroups with cgroupfs (a systemd slice path is refused)");
  app.add_flag("--debug", g.debug, "Debug logging on stderr");
  static std::string criu, rootless;
  app.add_option("--criu", criu, "Accepted and ignored (checkpoint/restore of gVisor containers uses runsc; native ones would need CRIU)");
  app.add_option("--rootless", rootless, "Accepted and ignored (true, false or auto)");

  std::function<int()> action;

  auto* create = app.add_subcommand("create", "Create a container from a bundle; its process waits for start");
  static ocirt::CreateRequest creq;
  create->add_option("-b,--bundle", creq.bundle, "Bundle directory (holds config.json)")->capture_default_str();
  create->add_option("--pid-file", creq.pid_file, "Write the container process's pid here");
  create->add_option("--console-socket", creq.console_socket, "Unix socket to send the pty master to (process.terminal)");
  create->add_flag("--no-pivot", creq.no_pivot, "Use MS_MOVE + chroot instead of pivot_root");
  create->add_flag("--no-new-keyring", creq.no_new_keyring, "Accepted (sbx-runc makes no session keyring)");
  create->add_option("--preserve-fds", creq.preserve_fds, "Pass the caller's fds 3 .. 3+N-1 to the container's process");
  create->add_option("id", creq.id, "Container id")->required();
  create->callback([&] { action = [&] { ocirt::create(g.root, creq); return 0; }; });

  auto* run = app.add_subcommand("run", "Create and start a container, wait for it and delete it (-d: return once it runs)");
  static bool run_detach = false;
  run->add_option("-b,--bundle", creq.bundle, "Bundle directory")->capture_default_str();
  run->add_option("--pid-file", creq.pid_file, "Write the container process's pid here");
  run->add_option("--console-socket", creq.console_socket, "Unix socket to send the pty master to");
  run->add_flag("-d,--detach", run_detach, "Return once it runs");
  run->add_flag("--no-pivot", creq.no_pivot, "Use MS_MOVE + chroot instead of pivot_root");
  run->add_flag("--no-new-keyring", creq.no_new_keyring, "Accepted");
  run->add_option("--preserve-fds", creq.preserve_fds, "Pass the caller's fds 3 .. 3+N-1 to the container's process");
  run->add_option("id", creq.id, "Container id")->required();
  run->callback([&] {
    action = [&] {
      if (!run_detach) return ocirt::run(g.root, creq);
      pid_t pid = ocirt::create(g.root, creq);
      if (pid == 0) return ocirt::gvisor_command(g.root, creq.id, creq.runsc_global_args, {"start", creq.id});
      ocirt::start(g.root, creq.id);
      return 0;
    };
  });

  static std::string id;
  auto* start = app.add_subcommand("start", "Start a created container");
  start->add_option("id", id, "Container id")->required();
  start->callback([&] { action = [&] { ocirt::start(g.root, id); return 0; }; });

  auto* state = app.add_subcommand("state", "Print a container's state (JSON)");
  state->add_option("id", id, "Container id")->required();
  state->callback([&] { action = [&] { std::cout << ocirt::state(g.root, id) << "\n"; return 0; }; });

  static bool kill_all = false;
  static std::string sig = "TERM";
  auto* kill = app.add_subcommand("kill", "Send a signal (default TERM) to a container's process");
  kill->add_flag("-a,--all", kill_all, "To every process in the container");
  kill->add_option("id", id, "Container id")->required();
  kill->add_option("signal", sig, "Signal name or number")->capture_default_str();
  kill->callback([&] { action = [&] { ocirt::kill(g.root, id, runtime::parse_signal(sig), kill_all); return 0; }; });

  static bool force = false;
  auto* del = app.add_subcommand("delete", "Delete a stopped (or created) container");
  del->add_flag("-f,--force", force, "Kill it first when it runs");
  del->add_option("id", id, "Container id")->required();
  del->callback([&] { action = [&] { ocirt::remove(g.root, id, force); return 0; }; });

  static ocirt::ExecRequest ereq;
  auto* exec = app.add_subcommand("exec", "Run one more process in a container");
  exec->add_option("-p,--process", ereq.process_file, "config.json-style process object (instead of ARGS)");
  exec->add_flag("-d,--detach", ereq.detach, "Return once it runs");
  exec->add_option("--pid-file", ereq.pid_file, "Write its pid here");
  exec->add_option("--console-socket", ereq.console_socket, "Unix socket to send the pty master to");
  exec->add_flag("-t,--tty", ereq.tty, "Give it a pty (with --console-socket)");
  exec->add_option("--cwd", ereq.cwd, "Working directory in the container");
  exec->add_option("-e,--env", ereq.env, "KEY=VALUE added to its environment (repeatable)");
  exec->add_option("-u,--user", ereq.user, "UID[:GID]");
  exec->add_option("--preserve-fds", ereq.preserve_fds, "Pass the caller's fds 3 .. 3+N-1 to the process");
  exec->add_option("id", ereq.id, "Container id")->required();
  exec->add_option("args", ereq.args, "The command and its arguments (after the id)");
  exec->callback([&] { action = [&] { return ocirt::exec(g.root, ereq); }; });

  static std::string format = "table";
  auto* ps = app.add_subcommand("ps", "List the processes in a container");
  ps->add_option("-f,--format", format, "table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  ps->add_option("id", id, "Container id")->required();
  ps->callback([&] {
    action = [&] {
      auto p = ocirt::pids(g.root, id);
      if (format == "json") {
        std::cout << nlohmann::json(p).dump() << "\n";
        return 0;
      }
      std::cout << "PID\tCMD\n";
      for (pid_t pid : p) {
        std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
        std::string cmd((std::istreambuf_iterator<char>(f)), {});
        for (auto& ch : cmd)
          if (ch == '\0') ch = ' ';
        std::cout << pid << "\t" << cmd << "\n";
      }
      return 0;
    };
  });

  auto* pause = app.add_subcommand("pause", "Freeze every process of a container");
  pause->add_option("id", id, "Container id")->required();
  pause->callback([&] { action = [&] { ocirt::pause(g.root, id, true); return 0; }; });
  auto* resume = app.add_subcommand("resume", "Thaw a paused container");
  resume->add_option("id", id, "Container id")->required();
  resume->callback([&] { action = [&] { ocirt::pause(g.root, id, false); return 0; }; });

  static std::string resources;
  auto* update = app.add_subcommand("update", "Change a container's cgroup limits");
  update->add_option("-r,--resources", resources, "linux.resources JSON file, or - for stdin")->required();
  update->add_option("id", id, "Container id")->required();
  update->callback([&] { action = [&] { ocirt::update(g.root, id, ocirt::parse_resources(read_all(resources))); return 0; }; });

  static bool quiet = false;
  auto* list = app.add_subcommand("list", "List containers");
  list->alias("ls");
  list->add_option("-f,--format", format, "table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  list->add_flag("-q,--quiet", quiet, "Ids only");
  list->callback([&] {
    action = [&] {
      auto l = ocirt::list(g.root);
      if (format == "json") {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& e : l)
          j.push_back({{"ociVersion", "1.0.2"}, {"id", e.id}, {"pid", e.pid}, {"status", e.status}, {"bundle", e.bundle}, {"created", e.created}});
        std::cout << j.dump() << "\n";
        return 0;
      }
      if (!quiet) std::cout << "ID\tPID\tSTATUS\tBUNDLE\tCREATED\n";
      for (const auto& e : l) {
        if (quiet) std::cout << e.id << "\n";
        else std::cout << e.id << "\t" << e.pid << "\t" << e.status << "\t" << e.bundle << "\t" << e.created << "\n";
      }
      return 0;
    };
  });

  static ocirt::CheckpointRequest ckreq;
  auto* checkpoint = app.add_subcommand("checkpoint", "Save a running container to an image directory (gVisor containers; native ones need CRIU)");
  checkpoint->add_option("--image-path", ckreq.image_path, "Directory to write the checkpoint image to")->required();
  checkpoint->add_option("--work-path", ckreq.work_path, "Accepted (runsc keeps no work files)");
  checkpoint->add_flag("--leave-running", ckreq.leave_running, "Keep the container running after the checkpoint");
  checkpoint->add_option("id", ckreq.id, "Container id")->required();
  checkpoint->callback([&] { action = [&] { ocirt::checkpoint(g.root, ckreq); return 0; }; });

  static ocirt::RestoreRequest rsreq;
  auto* restore = app.add_subcommand("restore", "Create and start a container from a checkpoint image (-d: return once it runs)");
  restore->add_option("-b,--bundle", rsreq.bundle, "Bundle directory (holds config.json)")->capture_default_str();
  restore->add_option("--image-path", rsreq.image_path, "Directory holding the checkpoint image")->required();
  restore->add_option("--work-path", rsreq.work_path, "Accepted (runsc keeps no work files)");
  restore->add_flag("-d,--detach", rsreq.detach, "Return once it runs");
  restore->add_option("--pid-file", rsreq.pid_file, "Write the container process's pid here");
  restore->add_option("--console-socket", rsreq.console_socket, "Unix socket to send the pty master to");
  restore->add_option("id", rsreq.id, "Container id")->required();
  restore->callback([&] { action = [&] { return ocirt::restore(g.root, rsreq); }; });

  auto* features = app.add_subcommand("features", "Print what this runtime supports (runtime-spec features JSON)");
  features->callback([&] { action = [&] { std::cout << ocirt::features_json() << "\n"; return 0; }; });

  // exec ID CMD ARGS...: the command's own options (sh -c …) are not ours.
  // CLI11 sees argv up to the id; the rest is the command.
  std::vector<std::string> words(argv + 1, argv + argc);
  std::vector<std::string> sub_args;  // the command word and what follows (for runsc)
  {
    static const std::set<std::string> kValued = {"--root", "--log", "--log-format", "--criu", "--rootless", "-p", "--process",
                                                  "--pid-file", "--console-socket", "--cwd", "-e", "--env", "-u", "--user",
                                                  "--preserve-fds"};
    bool in_exec = false;
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (w == "--") {
        if (in_exec) {
          words.erase(words.begin() + static_cast<long>(i));
          --i;
        }
        continue;
      }
      if (w.size() > 1 && w[0] == '-') {
        if (w.find('=') == std::string::npos && kValued.count(w)) ++i;
        continue;
      }
      if (!in_exec) {
        sub_args.assign(words.begin() + static_cast<long>(i), words.end());
        if (w != "exec") break;
        in_exec = true;
        continue;
      }
      // The id: everything after it is the command.
      ereq.args.assign(words.begin() + static_cast<long>(i) + 1, words.end());
      words.resize(i + 1);
      break;
    }
  }
  std::vector<std::string> cut_args = ereq.args;
  std::reverse(words.begin(), words.end());  // CLI11 takes them last-first
  std::optional<int> parse_exit = parse_command_line(app, [&] { app.parse(words); }, [&](const CLI::ParseError& e) {
    std::cerr << "sbx-runc: " << e.what() << "\nRun 'sbx-runc --help' for usage.\n";
    log_line(g, "error", e.what());
    return 1;
  });
  if (parse_exit) return *parse_exit;
  if (!cut_args.empty()) ereq.args = cut_args;
  ErrorReport report;
  report.prog = "sbx-runc";
  // runc exits 1 on errors; the command-not-found codes of exec stay.
  report.exit_code = [](const Error& e) {
    int code = e.exit_code();
    return code == kExitNotFound || code == kExitCannotExec ? code : 1;
  };
  report.internal_exit_code = 1;
  report.also = [&](const std::string& msg) { log_line(g, "error", msg); };
  return run_reporting_errors(
      [&] {
        log::set_level(g.debug ? "debug" : "warn");
        // A gVisor container (dev.sbx.runtime: gvisor) is runsc's: its commands go
        // there as they were given (ocirt/gvisor_delegate.h).
        std::vector<std::string> runsc_globals;
        if (!g.log_file.empty()) runsc_globals = {"--log", g.log_file, "--log-format", g.log_format};
        creq.runsc_global_args = ckreq.runsc_global_args = rsreq.runsc_global_args = runsc_globals;
        if (!app.get_subcommands().empty()) {
          std::string name = app.get_subcommands().front()->get_name();
          std::string target = name == "exec" ? ereq.id : id;
          if (name != "create" && name != "run" && name != "list" && name != "features" && name != "checkpoint" &&
              name != "restore" && ocirt::is_gvisor_container(g.root, target))
            return ocirt::gvisor_command(g.root, target, runsc_globals, sub_args);
        }
        if (g.systemd_cgroup)
          log_line(g, "warning", "--systemd-cgroup: sbx-runc does not use systemd; cgroups are managed with cgroupfs");
        return action ? action() : 0;
      },
      report);
}

}  // namespace sbx::cli
