// Long-lived sandboxes: sbx exec, ps, inspect, wait, stop, kill, rm, logs, cp
// (sbx create is in cmd_create.cpp: it shares sbx run's options). Thin: parse,
// call engine/engine.h, print.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/usage.h"
#include "cli/images.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/units.h"
#include "runtime/linux/sandbox_network.h"
#include "runtime/state.h"

namespace sbx::cli {

namespace {

using nlohmann::json;

std::string rfc3339(int64_t ms) {
  if (ms <= 0) return "";
  time_t s = static_cast<time_t>(ms / 1000);
  struct tm tm;
  ::gmtime_r(&s, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

/// How long since `ms` (epoch ms), as docker words it: "2 seconds", "1 minute".
std::string since(int64_t ms) {
  if (ms <= 0) return "";
  int64_t s = (runtime::now_ms() - ms) / 1000;
  auto n = [](int64_t v, const char* unit) { return std::to_string(v) + " " + unit + (v == 1 ? "" : "s"); };
  if (s < 1) return "Less than a second";
  if (s < 60) return n(s, "second");
  if (s < 3600) return n(s / 60, "minute");
  if (s < 86400) return n(s / 3600, "hour");
  return n(s / 86400, "day");
}

std::string ago(int64_t ms) { return ms <= 0 ? "" : since(ms) + " ago"; }

/// Prints ROWS (the first is the header) as columns padded to their widest
/// cell plus 3 spaces; the last column is not padded.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

std::string status_text(const runtime::SandboxInfo& i) {
  if (i.status == "running") return "Up " + since(i.state.started_ms ? i.state.started_ms : i.state.created_ms);
  if (i.status == "exited" && i.end) {
    std::string s = "Exited (" + std::to_string(i.end->exit_code) + ")";
    if (i.end->reason != "exit") s += " " + i.end->reason;
    if (i.end->ended_ms) s += " " + ago(i.end->ended_ms);
    return s;
  }
  if (i.status == "dead") return "Dead (create did not finish; sbx rm -f)";
  return i.status;
}

json info_json(const runtime::SandboxInfo& i, bool full) {
  const auto& st = i.state;
  json state = {{"Status", i.status},
                {"Running", i.status == "running"},
                {"Pid", i.status == "running" ? st.pid : 0},
                {"StartedAt", rfc3339(st.started_ms)},
                {"OOMKilled", i.end && i.end->reason == "oom"},
                {"OomKills", i.oom_kills},
                // Accounting (runtime/linux/cgroup_stats.h): so far, or at the end.
                {"CpuMs", i.usage.cpu_ms},
                {"MaxRssBytes", i.usage.max_rss_bytes},
                {"IoReadBytes", i.usage.io_read_bytes},
                {"IoWriteBytes", i.usage.io_write_bytes},
                {"DurationMs", i.usage.duration_ms}};
  if (i.end) {
    state["ExitCode"] = i.end->exit_code;
    state["Reason"] = i.end->reason;
    state["Signal"] = i.end->signal;
    state["FinishedAt"] = rfc3339(i.end->ended_ms);
  }
  json j = {{"Id", st.id},
            {"Name", st.name},
            {"Image", st.image_ref},
            {"ImageId", st.image_id},
            {"Runtime", st.runtime},
            {"Command", st.command},
            {"Created", rfc3339(st.created_ms)},
            {"Labels", st.labels},
            {"Timeout", st.timeout_ms / 1000.0},
            {"IdleTimeout", st.idle_timeout_ms / 1000.0},
            {"State", state}};
  if (full) {
    j["StateDir"] = i.dir;
    j["Cgroups"] = st.cgroups;
    j["NetworkSettings"] = json::parse(runtime::network_settings_json(st.id));
    try {
      j["Config"] = json::parse(fs::read_file(i.dir + "/config.json"));
    } catch (const std::exception&) {
      j["Config"] = nullptr;
    }
  }
  return j;
}

/// `ps --format TEMPLATE`: each {{.Field}} replaced (podman's names where
/// podman has them; the accounting as in inspect's State). Throws sbx::Error
/// on an unknown field.
std::string format_sandbox(const std::string& tmpl, const runtime::SandboxInfo& i, bool no_trunc) {
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t open = tmpl.find("{{", pos);
    std::string lit = tmpl.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    for (size_t t; (t = lit.find("\\t")) != std::string::npos;) lit.replace(t, 2, "\t");
    out += lit;
    if (open == std::string::npos) break;
    size_t close = tmpl.find("}}", open);
    if (close == std::string::npos) throw Error(ErrorKind::InvalidArgument,
                "invalid --format '" + tmpl + "': '{{' without '}}'");
    std::string field = tmpl.substr(open + 2, close - open - 2);
    field.erase(0, field.find_first_not_of(' '));
    field.erase(field.find_last_not_of(' ') + 1);
    std::string cmdline;
    for (const auto& a : i.state.command) cmdline += (cmdline.empty() ? "" : " ") + a;
    if (field == ".ID") out += no_trunc ? i.state.id : i.state.id.substr(0, 12);
    else if (field == ".Names") out += i.state.name;
    else if (field == ".Image") out += i.state.image_ref;
    else if (field == ".Status") out += status_text(i);
    else if (field == ".State") out += i.status;
    else if (field == ".Command") out += cmdline;
    else if (field == ".CpuMs") out += std::to_string(i.usage.cpu_ms);
    else if (field == ".MaxRssBytes") out += std::to_string(i.usage.max_rss_bytes);
    else if (field == ".IoReadBytes") out += std::to_string(i.usage.io_read_bytes);
    else if (field == ".IoWriteBytes") out += std::to_string(i.usage.io_write_bytes);
    else if (field == ".DurationMs") out += std::to_string(i.usage.duration_ms);
    else
      throw Error(ErrorKind::InvalidArgument, "invalid --format field {{" + field + "}}: use .ID .Names .Image .Status .State .Command .CpuMs "
                  ".MaxRssBytes .IoReadBytes .IoWriteBytes .DurationMs");
    pos = close + 2;
  }
  return out;
}

std::vector<runtime::SandboxInfo> list(const Globals& g, bool all, const std::vector<std::string>& filters) {
  return make_engine(g).list({all, filters});
}

// "ID:PATH" (a sandbox path) or a host path; a host path with ':' can be given as ./a:b.
bool split_sandbox_path(const std::string& arg, std::string& ref, std::string& path) {
  auto colon = arg.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  if (arg.find('/') < colon) return false;
  ref = arg.substr(0, colon);
  path = arg.substr(colon + 1);
  if (path.empty() || path[0] != '/') path = "/" + path;
  return true;
}

std::vector<std::string> resolve_all(const Globals& g, const std::vector<std::string>& refs) {
  auto eng = make_engine(g);
  std::vector<std::string> ids;
  for (const auto& r : refs) ids.push_back(eng.resolve(r));
  return ids;
}

}  // namespace

void register_lifecycle_commands(CLI::App& app, Globals& g, Action& action) {
  // ---- exec ----------------------------------------------------------------
  {
    struct ExecFlags {
      std::string id;
      std::vector<std::string> env;
      std::string workdir, user, timeout;
      bool interactive = false, tty = false;
      std::vector<std::string> args;
      std::vector<std::string> words;
    };
    auto f = std::make_shared<ExecFlags>();
    CLI::App* cmd = app.add_subcommand("exec", "Run a command in a running sandbox");
    set_usage(*cmd, {"sbx exec [OPTIONS] SANDBOX [--] COMMAND [ARG...]"});
    cmd->footer(
        "The command joins the sandbox's namespaces and cgroup, with the same capabilities,\n"
        "no_new_privs and seccomp profile as its first process. Exit status as 'sbx run':\n"
        "the command's code, 124 on --timeout, 125 sbx failed, 126 cannot execute, 127 not found,\n"
        "128+N killed by signal N.");
    cmd->prefix_command();
    cmd->allow_extras();
    cmd->fallthrough(false);
    // One vector positional: after "--" CLI11 hands every word to it.
    // No positionals: SANDBOX and COMMAND come in order from remaining()
    // (with a positional, CLI11 rejects "SANDBOX -- CMD -x" or reorders "-x").
    cmd->add_option("-e,--env", f->env, "Set an environment variable KEY=VALUE")->allow_extra_args(false);
    cmd->add_option("-w,--workdir", f->workdir, "Working directory inside the sandbox");
    cmd->add_option("-u,--user", f->user, "User: NAME|UID[:GROUP|GID]");
    cmd->add_option("--timeout", f->timeout, "Kill the command after this long (exit status 124)");
    cmd->add_flag("-i,--interactive", f->interactive, "Keep stdin open");
    cmd->add_flag("-t,--tty", f->tty, "Allocate a pseudo-terminal");
    cmd->callback([f, cmd, &g, &action] {
      std::vector<std::string> all;
      if (!f->id.empty()) all.push_back(f->id);
      for (auto& w : f->words) all.push_back(w);
      for (auto& r : cmd->remaining()) all.push_back(r);
      f->id.clear();
      f->args.clear();
      if (!all.empty()) {
        f->id = all[0];
        f->args.assign(all.begin() + 1, all.end());
      }
      if (!f->args.empty() && f->args[0] == "--") f->args.erase(f->args.begin());
      action = [f, &g] {
        if (f->id.empty()) throw Error("sbx exec: give a SANDBOX and a COMMAND; see 'sbx exec --help'");
        // Options CLI11 does not know come through as the first word (the
        // prefix command takes everything): a sandbox name never starts with '-'.
        if (f->id.size() > 1 && f->id[0] == '-')
          throw Error("sbx exec: unknown option " + f->id.substr(0, f->id.find('=')) + "; see 'sbx exec --help'");
        engine::ExecRequest req;
        req.sandbox = f->id;
        req.args = f->args;
        for (const auto& e : f->env) {
          if (e.find('=') != std::string::npos) {
            req.env.push_back(e);
          } else if (const char* v = std::getenv(e.c_str())) {
            req.env.push_back(e + "=" + v);  // "-e KEY": from sbx's environment, as docker
          }
        }
        req.cwd = f->workdir;
        req.user = f->user;
        req.interactive = f->interactive;
        req.tty = f->tty;
        if (!f->timeout.empty()) req.timeout = units::parse_duration(f->timeout, "--timeout");
        engine::ExecResult res = make_engine(g).exec(req);
        int code = res.exit_code;
        if (res.timed_out)
          std::cerr << "sbx: exec killed: timeout after " << f->timeout << "\n";
        return code;
      };
    });
  }

  // ---- ps ------------------------------------------------------------------
  {
    struct PsFlags {
      bool all = false, quiet = false, json = false, no_trunc = false;
      std::vector<std::string> filters;
      std::string format;  ///< --format: "json" or a template of {{.Field}}s (format_sandbox)
    };
    auto f = std::make_shared<PsFlags>();
    CLI::App* cmd = app.add_subcommand("ps", "List sandboxes (running ones; -a for all)");
    cmd->alias("list");
    cmd->add_flag("-a,--all", f->all, "Show every sandbox, not only running ones");
    cmd->add_flag("-q,--quiet", f->quiet, "Print ids only");
    cmd->add_flag("--json", f->json, "Print JSON");
    cmd->add_flag("--no-trunc", f->no_trunc, "Print full ids");
    cmd->add_option("-f,--filter", f->filters, "label=KEY[=VALUE], name=NAME, status=STATUS, id=PREFIX")->allow_extra_args(false);
    cmd->add_option("--format", f->format,
                    "json, or a line per sandbox from {{.ID}} {{.Names}} {{.Image}} {{.Status}} {{.Command}} {{.CpuMs}} "
                    "{{.MaxRssBytes}} {{.IoReadBytes}} {{.IoWriteBytes}} {{.DurationMs}} (\\t: tab)");
    cmd->callback([f, &g, &action] {
      action = [f, &g] {
        auto infos = list(g, f->all, f->filters);
        if (!f->format.empty() && f->format != "json") {
          for (const auto& i : infos) std::cout << format_sandbox(f->format, i, f->no_trunc) << "\n";
          return 0;
        }
        if (f->json || f->format == "json") {
          json arr = json::array();
          for (const auto& i : infos) arr.push_back(info_json(i, false));
          std::cout << arr.dump(2) << "\n";
          return 0;
        }
        if (f->quiet) {
          for (const auto& i : infos) std::cout << (f->no_trunc ? i.state.id : i.state.id.substr(0, 12)) << "\n";
          return 0;
        }
        // Columns as wide as their longest cell (as docker's tabwriter):
        // a long STATUS ("Exited (124) timeout 5 seconds ago") never
        // pushes NAMES out of line.
        std::vector<std::vector<std::string>> rows = {{"SANDBOX ID", "IMAGE", "COMMAND", "CREATED", "STATUS", "NAMES"}};
        for (const auto& i : infos) {
          std::string cmdline;
          for (const auto& a : i.state.command) cmdline += (cmdline.empty() ? "" : " ") + a;
          if (!f->no_trunc && cmdline.size() > 20) cmdline = cmdline.substr(0, 17) + "...";
          std::string image = i.state.image_ref;
          if (!f->no_trunc && image.size() > 24) image = image.substr(0, 21) + "...";
          rows.push_back({f->no_trunc ? i.state.id : i.state.id.substr(0, 12), image, cmdline, ago(i.state.created_ms),
                          status_text(i), i.state.name});
        }
        print_table(rows);
        return 0;
      };
    });
  }

  // ---- inspect ---------------------------------------------------------------
  // One `inspect` for sandboxes and images, as podman's: a sandbox id, prefix
  // or name first, else an image (cli/images.h). Replaces the image-only one.
  {
    for (CLI::App* old : app.get_subcommands([](CLI::App* a) { return a->get_name() == "inspect"; }))
      app.remove_subcommand(old);
    auto refs = std::make_shared<std::vector<std::string>>();
    auto fmt_json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("inspect", "Show everything about sandboxes or images (JSON)");
    cmd->add_option("NAME", *refs, "Sandbox ids, id prefixes or names; or an image")->required();
    cmd->add_flag("--json", *fmt_json, "Print JSON (the default and only format)");
    cmd->callback([refs, &g, &action] {
      action = [refs, &g] {
        auto eng = make_engine(g);
        std::vector<std::string> ids;
        for (const auto& r : *refs) {
          try {
            ids.push_back(eng.resolve(r));
          } catch (const Error&) {
            if (refs->size() == 1) return inspect_image(g, r);
            throw;
          }
        }
        json arr = json::array();
        for (const auto& id : ids)
          arr.push_back(info_json(eng.inspect(id), true));
        std::cout << arr.dump(2) << "\n";
        return 0;
      };
    });
  }

  // ---- wait ------------------------------------------------------------------
  {
    auto refs = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = app.add_subcommand("wait", "Wait for sandboxes to end; print each one's exit code");
    cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
    cmd->callback([refs, &g, &action] {
      action = [refs, &g] {
        auto eng = make_engine(g);
        for (const auto& id : resolve_all(g, *refs)) {
          auto end = eng.wait(id);
          std::cout << (end ? end->exit_code : -1) << std::endl;
        }
        return 0;
      };
    });
  }

  // ---- stop / kill -----------------------------------------------------------
  {
    auto refs = std::make_shared<std::vector<std::string>>();
    auto time_s = std::make_shared<double>(10);
    CLI::App* cmd = app.add_subcommand("stop", "Stop sandboxes: SIGTERM, then SIGKILL after --time");
    cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
    cmd->add_option("-t,--time", *time_s, "Seconds to wait before SIGKILL")->capture_default_str();
    cmd->callback([refs, time_s, &g, &action] {
      action = [refs, time_s, &g] {
        auto eng = make_engine(g);
        for (const auto& id : resolve_all(g, *refs)) {
          eng.stop(id, std::chrono::milliseconds(static_cast<int64_t>(*time_s * 1000)));
          std::cout << id << "\n";
        }
        return 0;
      };
    });
  }
  {
    auto refs = std::make_shared<std::vector<std::string>>();
    auto sig = std::make_shared<std::string>("KILL");
    CLI::App* cmd = app.add_subcommand("kill", "Send a signal to sandboxes (default SIGKILL)");
    cmd->add_option("SANDBOX", *refs, "Sandbox ids, id prefixes or names")->required();
    cmd->add_option("-s,--signal", *sig, "Signal name or number")->capture_default_str();
    cmd->callback([refs, sig, &g, &action] {
      action = [refs, sig, &g] {
        int n = engine::parse_signal(*sig);
        auto eng = make_engine(g);
        for (const auto& id : resolve_all(g, *refs)) {
          eng.kill(id, n);
          std::cout << id << "\n";
        }
        return 0;
      };
    });
  }

  // ---- rm --------------------------------------------------------------------
  {
    struct RmFlags {
      std::vector<std::string> refs, filters;
      bool force = false, all = false;
    };
    auto f = std::make_shared<RmFlags>();
    CLI::App* cmd = app.add_subcommand("rm", "Remove sandboxes (-f: also running ones)");
    cmd->add_option("SANDBOX", f->refs, "Sandbox ids, id prefixes or names");
    cmd->add_flag("-f,--force", f->force, "Kill running sandboxes first");
    cmd->add_flag("-a,--all", f->all, "Remove every sandbox (with --filter: every matching one)");
    cmd->add_option("--filter", f->filters, "label=KEY[=VALUE], name=, status=, id=")->allow_extra_args(false);
    cmd->callback([f, &g, &action] {
      action = [f, &g] {
        auto eng = make_engine(g);
        std::vector<std::string> ids;
        if (f->all || !f->filters.empty()) {
          for (const auto& i : list(g, true, f->filters)) ids.push_back(i.state.id);
        } else if (f->refs.empty()) {
          throw Error("sbx rm: give sandbox ids or names, --all, or --filter");
        }
        int rc = 0;
        for (const auto& r : f->refs) {
          try {
            ids.push_back(eng.resolve(r));
          } catch (const Error& e) {
            std::cerr << "sbx: error: " << e.what() << "\n";
            rc = e.exit_code();
          }
        }
        for (const auto& id : ids) {
          try {
            eng.remove(id, f->force);
            std::cout << id << "\n";
          } catch (const Error& e) {
            std::cerr << "sbx: error: " << e.what() << "\n";
            rc = e.exit_code();
          }
        }
        return rc;
      };
    });
  }

  // ---- logs ------------------------------------------------------------------
  {
    auto ref = std::make_shared<std::string>();
    auto follow = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("logs", "Print the output of a sandbox's first process");
    cmd->add_option("SANDBOX", *ref, "Sandbox id, id prefix or name")->required();
    cmd->add_flag("-f,--follow", *follow, "Keep printing until the sandbox ends");
    cmd->callback([ref, follow, &g, &action] {
      action = [ref, follow, &g] {
        make_engine(g).logs(*ref, *follow, [](const char* p, size_t n) {
          std::fwrite(p, 1, n, stdout);
          std::fflush(stdout);
        });
        return 0;
      };
    });
  }

  // ---- cp --------------------------------------------------------------------
  {
    auto src = std::make_shared<std::string>(), dst = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("cp", "Copy files between a running sandbox and the host");
    set_usage(*cmd, {"sbx cp [OPTIONS] SANDBOX:SRC HOST-DEST", "sbx cp [OPTIONS] HOST-SRC SANDBOX:DEST"});
    cmd->footer(
        "Modes and mtimes are kept; symlinks are copied as symlinks and never followed out of\n"
        "the sandbox. A destination that is an existing directory receives the source under its name.\n"
        "Out of a sandbox, set-uid/set-gid bits are cleared and no file capability is copied.\n"
        "gVisor: SBX_CP_MAX_BYTES bounds the sandbox's tar stream (default none); a tar silent for\n"
        "SBX_CP_STALL_TIMEOUT seconds (default 30) is killed, exit status 124.");
    cmd->add_option("SRC", *src, "Source")->required();
    cmd->add_option("DEST", *dst, "Destination")->required();
    cmd->callback([src, dst, &g, &action] {
      action = [src, dst, &g] {
        std::string ref, path;
        if (split_sandbox_path(*src, ref, path)) {
          std::string other_ref, other_path;
          if (split_sandbox_path(*dst, other_ref, other_path))
            throw Error(ErrorKind::Unsupported,
                        "sbx cp: copying between two sandboxes is not supported; copy through the host");
          make_engine(g).copy_out(ref, path, *dst);
        } else if (split_sandbox_path(*dst, ref, path)) {
          make_engine(g).copy_in(ref, *src, path);
        } else {
          throw Error(ErrorKind::InvalidArgument, "sbx cp: one of SRC and DEST must be SANDBOX:PATH");
        }
        return 0;
      };
    });
  }
}

}  // namespace sbx::cli
