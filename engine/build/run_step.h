// A RUN step: one native sandbox with the isolation of `sbx run` (its own
// user namespace, seccomp, capabilities, memory and pids bounds), whose
// overlay upper dir is on disk (under the store's tmp dir, not the RAM of
// /run) and has no size bound of its own, so apt or pip can write what they
// need; its output goes to a callback as it comes. What the step wrote is
// then the upper dir, read by snapshot/upper_to_layer with the sandbox's id
// maps.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"

namespace sbx::build {

/// What one RUN runs in.
struct RunStep {
  std::string image_id;                 ///< the image the step runs on (recorded as the sandbox's image)
  std::vector<std::string> layer_dirs;  ///< its layers, bottom first
  std::string upper_dir;                ///< an empty directory on disk: the step's upper and work dirs go here
  std::vector<std::string> args;        ///< argv (shell form: SHELL + the command)
  std::vector<std::string> env;         ///< the whole environment, KEY=VALUE
  std::string workdir = "/";
  std::string user;                     ///< USER ("" = root)
  NetworkMode network = NetworkMode::Private;
  std::vector<Mount> mounts;            ///< RUN --mount=type=cache / secret
  /// Files written in the sandbox before the command starts (absolute path
  /// -> content; put them on a tmpfs such as /dev/shm to keep them out of
  /// the layer): a here-document script run by its #! interpreter.
  std::vector<std::pair<std::string, std::string>> files;
  std::string run_root = "/run/sbx";
  bool forward_signals = true;          ///< INT/TERM to sbx go to the step (the CLI); not in a server
};

/// The SandboxSpec of a RUN step: the one place where the builder turns a
/// step into a sandbox (hostname = the id's first 12 characters; default
/// capabilities; the default memory bound and RLIMIT_NOFILE of
/// runtime/default_bounds.h; the pids limit of `sbx run`; no timeout).
SandboxSpec step_spec(const RunStep& step);

/// How the step ended, and the id maps its upper dir was written with.
struct RunStepResult {
  ExitStatus status;
  std::vector<IdMapping> uid_map, gid_map;  ///< the sandbox's user namespace (container -> host)
  std::chrono::milliseconds elapsed{0};
};

/// Runs the step; `output` gets stdout and stderr (merged, in order) as they
/// come, in chunks, from another thread than the caller's. The sandbox, its
/// cgroup, state dir, id range and network are gone when it returns; the
/// upper dir stays (step.upper_dir/upper). Throws sbx::Error (125) when the
/// sandbox cannot be made; the command's own failure is in the result
/// (127: not found, 126: not executable, or its exit code).
RunStepResult run_step(const RunStep& step, const std::function<void(const char*, size_t)>& output);

/// Removes from a RUN step's upper dir what the sandbox itself put there,
/// not the command: /etc/hostname, /etc/hosts and /etc/resolv.conf (bind
/// mounts in docker, never part of a layer), and empty mount points the
/// runtime created for /proc, /sys, /dev and `mounts` where the image has
/// none (`image_has(path)` says whether it does). Parents left empty and
/// absent from the image go too.
void scrub_upper(const std::string& upper, const std::vector<std::string>& mount_points,
                 const std::function<bool(const std::string&)>& image_has);

}  // namespace sbx::build
