// The sandbox options that `sbx run` and `sbx create` share: their flags, the
// split of `IMAGE [--] [CMD...]` off the command line, and the SandboxSpec
// built from them. Each command adds only its own flags (run: -i, -t, --rm,
// --gpus, --mount-snapshot; create: --idle-timeout, --label).
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/sandbox_options.h"
#include "engine/userns.h"
#include "runtime/backends.h"
#include "spec/sandbox_spec.h"

namespace sbx::cli {

/// The parsed shared options, as typed (validated by build_spec).
struct SandboxFlags {
  // The command line's split (see add_sandbox_options).
  std::string first;                    ///< the first positional, as CLI11 saw it
  std::string unknown;                  ///< an unknown option before IMAGE
  size_t nargs = 0;                     ///< words after the subcommand's name
  bool exact = false;                   ///< positional came from the command line's words (set_command_line)
  std::vector<std::string> positional;  ///< IMAGE [--] CMD ARGS… (with --rootfs: CMD ARGS…)

  std::vector<std::string> env, env_files, volumes, mounts, tmpfs, ulimits;
  std::vector<std::string> allow_egress, deny_egress, publish, dns, add_hosts;  ///< --network private
  std::vector<std::string> network_aliases;  ///< --network-alias (the first user-defined network)
  std::string ip;                            ///< --ip (the first user-defined network)
  std::string workdir, user, hostname, network = "none", memory, timeout, name, rootfs, entrypoint, disk;
  std::string userns = "auto";
  std::string runtime = sbx::runtime::default_backend_name(), runsc;
  std::string pull = "missing";  ///< --pull: missing|always|never|newer (oci/pull.h)
  bool pull_set = false;
  std::optional<double> cpus;
  int64_t pids_limit = 1024;
  bool read_only = false, entrypoint_set = false, workdir_set = false, user_set = false;
};

/// The help texts that differ between the commands.
struct SandboxHelp {
  const char* image;
  const char* memory;
  const char* timeout;
  const char* name;
};

/// Adds the IMAGE positional and the shared options to `cmd` (a subcommand
/// of `app`), writing into `*f`. Sets prefix_command(): every word from IMAGE
/// on belongs to the sandbox. Call finish_command_line(*cmd, *f) from the
/// subcommand's callback.
void add_sandbox_options(CLI::App& app, CLI::App& cmd, const std::shared_ptr<SandboxFlags>& f,
                         const SandboxHelp& help);

/// Fills f.positional once parsing is done (from /proc/self/cmdline when it
/// can: CLI11 2.1 cannot tell "--bad IMAGE" from "IMAGE --bad", nor "-- CMD"
/// from "CMD --"). An unknown option before IMAGE is kept in f.unknown for
/// build_spec to report.
void finish_command_line(CLI::App& cmd, SandboxFlags& f);

/// The whole command line (argv[0] first) as main hands it to CLI11; `sbx
/// run`/`create` read the words of their own part from it, exactly.
void set_command_line(std::vector<std::string> words);

/// What differs in the spec between the commands.
struct BuildOptions {
  std::string command;         ///< "run" or "create", for messages
  bool terminal = false;       ///< -t: TERM=xterm
  bool hold_without_command = false;  ///< no CMD: empty process.args (create: the sandbox only holds)
  bool stdin_open = false;            ///< run -i
  std::string gpus;                   ///< run --gpus
  std::vector<std::string> devices;   ///< run --device
  std::string gpu_host_root = "/";    ///< where the host's /dev, /proc are (cli/gpu_options.h)
  std::vector<std::string> mount_snapshots;   ///< run --mount-snapshot NAME:/TARGET
  std::chrono::milliseconds idle_timeout{0};  ///< create --idle-timeout
  std::map<std::string, std::string> labels;  ///< create --label
};

/// The flags as the engine's options (engine/sandbox_options.h), nothing
/// decided: the IMAGE [--] CMD split, sizes and durations parsed (naming the
/// flag), --pull, --userns checked. Throws sbx::Error (exit 125) on an
/// unknown option or a malformed value.
engine::SandboxOptions sandbox_options(const SandboxFlags& f, const BuildOptions& b);

/// The request for the shared flags: sandbox_options, then the engine's
/// builder (engine::build_sandbox: image resolved in g.root or pulled, its
/// config, defaults, bounds, mounts, network), its warnings (rlimits clamped
/// to the hard limits) logged. Throws sbx::Error (exit 125) naming the flag.
engine::RunRequest build_request(const Globals& g, const SandboxFlags& f, const BuildOptions& b);

/// build_request's spec.
SandboxSpec build_spec(const Globals& g, const SandboxFlags& f, const BuildOptions& b);

/// --userns (auto or host, checked by sandbox_options) as the engine's mode;
/// the engine decides from it and the spec (engine/userns.h use_userns).
engine::UsernsMode userns_mode(const SandboxFlags& f);

}  // namespace sbx::cli
