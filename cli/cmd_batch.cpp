// sbx batch: run many tasks, each in its own throw-away sandbox, N at a time
// (engine::Engine::batch, engine/batch.h). The CLI parses flags, builds the
// base spec of an image the way `sbx run` does, prints results and progress.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/sandbox_flags.h"
#include "common/error.h"
#include "common/log.h"
#include "common/units.h"
#include "engine/batch.h"
#include "runtime/backends.h"
#include "runtime/linux/network_options.h"

namespace sbx::cli {

namespace {

struct BatchFlags {
  std::string tasks, output, image, timeout, memory, max_output = "1m";
  std::string network = "none", userns = "auto", runtime = sbx::runtime::default_backend_name(), runsc;
  std::vector<std::string> allow_egress, deny_egress, dns, add_hosts;  ///< --network private
  int parallel = 1;
  int pool = -1;  ///< -1: as --parallel
  bool resume = false, quiet = false;
};

const char* kBatchFooter =
    "Task lines (JSON, one per line):\n"
    "  {\"id\": \"t1\", \"image\": \"python\", \"cmd\": [\"python3\", \"/work/x.py\"] | \"script\": \"echo hi\",\n"
    "   \"stdin\": \"…\", \"env\": {\"K\": \"V\"}, \"files\": {\"/work/x.py\": \"text\", \"/work/b\": {\"base64\": \"…\"}},\n"
    "   \"timeout\": 10 | \"10s\", \"memory\": \"256m\", \"pids_limit\": 64, \"cpus\": 0.5,\n"
    "   \"network\": \"none\" | \"private\" | \"host\" (else --network; private takes the egress options)}\n"
    "  cmd is the whole argv (the image's Entrypoint is not prepended); id is required and unique.\n"
    "Result lines (JSON, as tasks finish; to stdout, or appended to -o FILE):\n"
    "  id, line, exit_code, end_reason (exit, signal, timeout, oom, failed, invalid), error, stdout, stderr,\n"
    "  stdout_truncated, stderr_truncated, duration_ms, cpu_ms, max_rss_bytes, io_read_bytes, io_write_bytes\n"
    "A malformed line gets an 'invalid' result naming its line number; the batch goes on.\n"
    "Ctrl-C (SIGINT/SIGTERM/SIGHUP): no new task starts, running ones are killed and removed and get no\n"
    "result, so --resume runs them again.\n"
    "Exit status: 0 every task exited 0; 1 some did not (or were invalid); 128+N stopped by signal N;\n"
    "125 sbx itself failed (task file or output unreadable, bad option).\n";

std::string rate_text(const engine::BatchProgress& p) {
  double secs = static_cast<double>(p.elapsed.count()) / 1000.0;
  char b[160];
  double rate = secs > 0 ? static_cast<double>(p.done) / secs : 0;
  size_t left = p.total - p.skipped - p.done;
  if (rate > 0 && left > 0)
    std::snprintf(b, sizeof b, "%.1f/s, ETA %.0fs", rate, static_cast<double>(left) / rate);
  else
    std::snprintf(b, sizeof b, "%.1f/s", rate);
  return b;
}

int batch(const Globals& g, const BatchFlags& f) {
  engine::BatchRequest req;
  req.tasks = f.tasks;
  if (f.tasks == "-") req.input = &std::cin;
  req.output = f.output;
  req.resume = f.resume;
  if (f.resume && f.output.empty()) throw Error("--resume needs -o FILE (the results to resume from)");
  req.parallel = f.parallel;
  if (f.pool < -1) throw Error(ErrorKind::InvalidArgument,
              "invalid --pool " + std::to_string(f.pool) + ": give 0 (off) or a size");
  req.pool = static_cast<size_t>(f.pool < 0 ? f.parallel : f.pool);
  req.max_output = units::parse_size(f.max_output, "--max-output");
  SandboxFlags sf;
  sf.network = f.network;
  sf.allow_egress = f.allow_egress;
  sf.deny_egress = f.deny_egress;
  sf.dns = f.dns;
  sf.add_hosts = f.add_hosts;
  sf.userns = f.userns;
  sf.runtime = f.runtime;
  sf.runsc = f.runsc;
  sf.exact = true;
  sf.memory = f.memory;
  sf.timeout = f.timeout;
  // The egress options are checked once here, not per task (a bad one would
  // fail every task): as `sbx run`, they need --network private.
  if (f.network != "private" && f.network != "bridge" &&
      !(f.allow_egress.empty() && f.deny_egress.empty() && f.dns.empty() && f.add_hosts.empty()))
    throw Error("--allow-egress, --deny-egress, --dns and --add-host need --network private");
  if (f.network == "private" || f.network == "bridge") {
    spec::NetworkOptions no;
    no.allow_egress = f.allow_egress;
    no.deny_egress = f.deny_egress;
    no.dns = f.dns;
    runtime::validate_network_options(no);  // a bad CIDR: exit 125 before any task
  }
  // The batch's flags as the engine's options, as `sbx run` translates its
  // own; each task line goes over them and through the engine's builder.
  BuildOptions bo;
  bo.command = "run";
  req.options = sandbox_options(sf, bo);
  req.options.image = f.image;
  req.options.pull_options.progress = make_pull_printer(false, false);
  req.on_warning = [](const std::string& w) { log::warn(w); };
  if (f.output.empty()) req.on_result = [](const std::string& line) { std::cout << line << std::endl; };
  const bool tty = ::isatty(2) && !f.quiet;
  size_t last_tenth = 0;
  req.progress = [&](const engine::BatchProgress& p) {
    if (f.quiet) return;
    if (tty) {
      std::fprintf(stderr, "\r\033[K[%zu/%zu] failed %zu, running %zu, %s", p.done + p.skipped, p.total, p.failed,
                   p.running, rate_text(p).c_str());
    } else if (p.total && (p.done + p.skipped) * 10 / p.total > last_tenth) {
      last_tenth = (p.done + p.skipped) * 10 / p.total;
      std::fprintf(stderr, "sbx batch: %zu/%zu done, %zu failed, %s\n", p.done + p.skipped, p.total, p.failed,
                   rate_text(p).c_str());
    }
  };
  engine::BatchSummary s = make_engine(g).batch(req);
  if (tty) std::fprintf(stderr, "\r\033[K");
  const auto& p = s.progress;
  if (!f.quiet) {
    // Skipped tasks exist only with --resume (their results were in -o's file).
    std::string skipped = p.skipped ? ", " + std::to_string(p.skipped) + " skipped (already in " + f.output + ")" : "";
    std::fprintf(stderr, "sbx batch: %zu done, %zu failed%s, %zu total in %.1fs%s\n", p.done, p.failed, skipped.c_str(),
                 p.total, static_cast<double>(p.elapsed.count()) / 1000.0,
                 s.interrupted ? "; stopped by a signal: unfinished tasks have no result (use --resume)" : "");
  }
  if (s.interrupted) return 128 + s.signal;
  return p.failed ? 1 : 0;
}

}  // namespace

void register_batch_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<BatchFlags>();
  CLI::App* cmd = app.add_subcommand("batch", "Run many tasks (JSON lines), each in its own throw-away sandbox, N at a time");
  cmd->footer(kBatchFooter);
  cmd->add_option("TASKS", f->tasks, "Task file (JSON lines); - for stdin")->required();
  cmd->add_option("-P,--parallel", f->parallel, "Sandboxes at a time")->capture_default_str();
  cmd->add_option("--pool", f->pool,
                  "Warm pool: sandboxes kept set up per image, one task each (default: as -P; 0: off)");
  cmd->add_option("--image", f->image, "Image for tasks without \"image\"");
  cmd->add_option("--timeout", f->timeout, "Kill a task's sandbox after this long (10s, 1m); end_reason timeout");
  cmd->add_option("-m,--memory", f->memory, "Memory limit per task (e.g. 256m; default: sbx run's); end_reason oom");
  cmd->add_option("--network", f->network,
                  "none (default), private (each task its own network; the egress options below) or host")
      ->capture_default_str();
  cmd->add_option("--allow-egress", f->allow_egress,
                  "With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN (repeatable); all else is refused")
      ->allow_extra_args(false);
  cmd->add_option("--deny-egress", f->deny_egress, "With --network private: refuse this IP or CIDR (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--dns", f->dns, "With --network private: a DNS server for /etc/resolv.conf (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--add-host", f->add_hosts, "With --network private: add NAME:IP to /etc/hosts (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", f->output, "Append result lines to FILE (else print them)")->type_name("FILE");
  cmd->add_flag("--resume", f->resume, "Keep -o FILE and skip the tasks whose id has a result in it");
  cmd->add_option("--max-output", f->max_output, "Bytes of stdout and of stderr kept per task (more: *_truncated)")
      ->capture_default_str();
  cmd->add_option("--userns", f->userns, "auto (own user namespace unless the task's network is host) or host")->capture_default_str();
  cmd->add_option("--runtime", f->runtime, "native or gvisor")->envname("SBX_RUNTIME")->capture_default_str();
  cmd->add_option("--runsc", f->runsc, "gVisor: the runsc binary (default: from $PATH)");
  cmd->add_flag("-q,--quiet", f->quiet, "No progress or summary on stderr");
  cmd->callback([f, &g, &action] { action = [f, &g] { return batch(g, *f); }; });
}

}  // namespace sbx::cli
