// How an image's config (Entrypoint, Cmd, Env, WorkingDir, User) and the
// user's run options combine into SandboxSpec.process, as docker does
// (https://docs.docker.com/reference/dockerfile/#understand-how-cmd-and-entrypoint-interact).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "oci/image.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// What the user asked for on the command line (each unset field falls back to
/// the image's value).
struct ProcessOverrides {
  std::vector<std::string> command;              ///< CMD ARGS after the image (replaces Cmd)
  std::optional<std::vector<std::string>> entrypoint;  ///< --entrypoint ("" clears it)
  std::vector<std::string> env;                  ///< -e and --env-file, "KEY=VAL", in order
  std::optional<std::string> workdir;            ///< -w
  std::optional<std::string> user;               ///< -u
  bool terminal = false;                         ///< -t (adds TERM=xterm)
};

/// Fills spec.process from the image config and the overrides: args =
/// Entrypoint + (command or Cmd); env = PATH default, HOSTNAME, image Env,
/// then overrides by key (TERM=xterm with a terminal); cwd = -w, WorkingDir
/// or "/"; user = -u or User. Throws sbx::Error when there is no command or
/// the working directory is not absolute.
void apply_image_config(SandboxSpec& spec, const oci::ImageConfig& image, const ProcessOverrides& o);

/// Parses a docker --env-file: KEY=VAL lines, '#' comments and blank lines
/// skipped, a bare KEY takes the value from sbx's environment (or is dropped).
/// Throws sbx::Error naming the file and line.
std::vector<std::string> parse_env_file(const std::string& path);

/// "-e KEY" (no '=') takes KEY's value from sbx's environment; returns
/// nullopt when it is not set there (docker drops it).
std::optional<std::string> expand_env_arg(const std::string& arg);

}  // namespace sbx::runtime
