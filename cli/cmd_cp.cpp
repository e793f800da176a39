// sbx cp: files between a running sandbox and the host. Thin: parse, call engine/engine.h, print.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/usage.h"
#include "common/error.h"

namespace sbx::cli {

namespace {

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


}  // namespace

void register_cp_command(CLI::App& app, Globals& g, Action& action) {
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

}  // namespace sbx::cli
