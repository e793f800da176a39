// sbx exec: a command in a running sandbox (engine::Engine::exec). Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/usage.h"
#include "common/error.h"
#include "common/units.h"

namespace sbx::cli {

void register_exec_command(CLI::App& app, Globals& g, Action& action) {
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

}  // namespace sbx::cli
