// One options type for a new sandbox and the one builder that turns it into
// the engine's request. Every front end (sbx run/create flags, Docker's
// container config, /sbx/v1, E2B, sbx batch task lines) translates its wire
// format into SandboxOptions and nothing more; build_sandbox() makes every
// decision: the image and its config, defaults and bounds, capabilities, the
// backend, mounts (binds, tmpfs, snapshot copies) and their checks, the
// network, GPUs, the user-namespace mode. The same request through any front
// end gives the same spec. (The model: podman's pkg/specgen SpecGenerator.)
//
// New features add a field here and its handling in build_sandbox (named
// volumes, networks by name, recording, standby): never in a front end.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace sbx::engine {

/// What a new sandbox should be. Unset fields take the image's value or
/// sbx's default. Strings are as a user types them (the builder parses and
/// checks them, naming the option in `SandboxOptions::names`).
struct SandboxOptions {
  // Identity.
  std::string id;        ///< empty: a new random id
  std::string name;      ///< empty: none
  std::string hostname;  ///< empty: the id's first 12 characters
  std::map<std::string, std::string> labels;

  // Image: a reference in the store (pulled per `pull`), or a root directory.
  std::string image;   ///< name[:tag], id or id prefix
  std::string rootfs;  ///< instead of an image: this directory (read-only, overlaid)
  oci::PullPolicy pull = oci::PullPolicy::Missing;
  bool pull_explicit = false;  ///< the user chose `pull` (short names may then be pulled)
  oci::PullOptions pull_options;  ///< progress callback, registries

  // Process (each unset part falls back to the image config).
  std::vector<std::string> command;  ///< replaces the image's Cmd
  std::optional<std::vector<std::string>> entrypoint;  ///< replaces its Entrypoint ({} or {""} clears it)
  std::vector<std::string> env_files;  ///< docker --env-file files, read first
  std::vector<std::string> env;        ///< KEY=VAL, or KEY to copy sbx's own value
  std::optional<std::string> workdir, user;
  bool terminal = false;    ///< -t: TERM=xterm
  bool stdin_open = false;  ///< -i
  /// No command and no entrypoint given: the sandbox holds (empty
  /// process.args; the image's Cmd is not run), also on an image without
  /// Cmd or Entrypoint. Otherwise a missing command is an error.
  bool hold_without_command = false;

  // File system.
  /// HOST:CTR[:OPTS] (-v, Docker Binds); OPTS ro,rw,nosuid,nodev,noexec,idmap=host;
  /// or NAME:CTR[:ro|nocopy], a named volume (engine/volumes.h), created when missing
  std::vector<std::string> volumes;
  /// docker's --mount type=bind|volume|tmpfs,source=…,target=…[,readonly] (engine/volumes.h parse_mount_flag)
  std::vector<std::string> mounts;
  std::vector<std::string> tmpfs;    ///< PATH[:OPTS] (--tmpfs, Docker Tmpfs/Mounts); size=,mode=,exec,…
  std::vector<std::string> snapshot_mounts;  ///< NAME:/TARGET: a private, writable copy of a directory snapshot
  bool read_only = false;
  /// Volumes may ask for idmap=host (sandbox root writes as host root): the
  /// command line's opt-in; the API servers do not offer it.
  bool allow_host_idmap = true;

  // Resources (bytes, ms).
  std::optional<int64_t> memory_bytes;
  std::optional<uint64_t> disk_bytes;  ///< writable layer; at least 1 MiB
  std::optional<double> cpus;          ///< above 0
  std::optional<int64_t> pids_limit;   ///< unset: 1024; 0 or below: unlimited
  std::vector<std::string> ulimits;    ///< NAME=SOFT[:HARD]
  std::chrono::milliseconds timeout{0}, idle_timeout{0};  ///< 0: none
  /// `sbx run`: a native run's writable layer gets the default disk bound.
  bool run_layer = false;

  // Security.
  std::vector<std::string> cap_add, cap_drop;  ///< over the default set; "ALL" drops all; with or without CAP_
  UsernsMode userns = UsernsMode::Auto;

  // Network.
  /// none, host, private (alias bridge), or NAME[,NAME…] of user-defined networks
  std::string network = "none";
  std::vector<std::string> network_aliases;  ///< more names on the first user-defined network's DNS
  std::string ip;                            ///< the address on the first user-defined network
  /// Aliases and an address per user-defined network (Docker's
  /// NetworkingConfig.EndpointsConfig), merged by network name into what
  /// `network` chose; one naming a network not chosen there is an error.
  std::vector<NetworkAttachment> network_endpoints;
  /// private (publish, add_hosts: user-defined networks too)
  std::vector<std::string> allow_egress, deny_egress, publish, dns, add_hosts;

  // Backend and devices.
  std::string runtime;  ///< native, gvisor (Docker's runsc); empty: `default_runtime` of build_sandbox
  std::string runsc;    ///< gVisor's runsc; empty: $PATH
  GpuRequest gpu;       ///< gpus/devices empty: none

  /// How the front end calls its options, for error messages ("--volume",
  /// "HostConfig.Binds", "volumes").
  struct Names {
    std::string volume = "--volume", mount = "--mount", tmpfs = "--tmpfs", network = "--network", cpus = "--cpus", disk = "--disk",
                add_host = "--add-host", cap_add = "--cap-add", cap_drop = "--cap-drop";
    std::string command = "run";  ///< for "give one after the image" hints
  } names;
};

/// The image a sandbox starts from, resolved in the store (or a --rootfs).
struct ResolvedImage {
  std::string ref;  ///< as the user named it (or the rootfs's real path)
  std::string id;   ///< image id; empty for a rootfs
  oci::ImageConfig config;
  std::vector<std::string> layer_dirs;  ///< bottom first
};

/// o.image resolved (pulled first as o.pull says) or o.rootfs made real.
/// Throws sbx::Error (ImageNotFound, …).
ResolvedImage resolve_image(Engine& engine, const SandboxOptions& o);

/// A stored image as a ResolvedImage (`ref` as the user named it).
ResolvedImage resolved(Engine& engine, const oci::ImageRecord& img, const std::string& ref);

/// The request for `o` on `image` (no store needed: the pure part, which
/// the unit tests drive): spec (id, image, process from the image config and the overrides, default
/// capabilities with cap_add/cap_drop, mounts checked, network, bounds and
/// defaults, rlimits clamped to the hard limits (warnings to `warnings`),
/// GPUs), the userns mode, runsc and the snapshot mounts (copied when the
/// sandbox starts: Engine::run, Engine::create). `default_runtime`: the
/// backend when o.runtime is empty (empty: $SBX_RUNTIME or native).
/// Throws sbx::Error (InvalidArgument, Unsupported, ImageNotFound, …) naming
/// the option; nothing is made on the host.
RunRequest build_sandbox(const SandboxOptions& o, const ResolvedImage& image, const std::string& default_runtime = "",
                         std::vector<std::string>* warnings = nullptr);

/// resolve_image then build_sandbox.
RunRequest build_sandbox(Engine& engine, const SandboxOptions& o, const std::string& default_runtime = "",
                         std::vector<std::string>* warnings = nullptr);

/// -v HOST:CTR[:OPTS] → a bind mount (host path made absolute with
/// realpath); -v NAME:CTR[:OPTS] (a source without a leading '/' or '.') → a
/// named volume mount (engine/volumes.h parse_volume_mount). `what` names the
/// option in errors. Throws sbx::Error.
Mount parse_volume(const std::string& text, const std::string& what = "--volume");

/// --tmpfs PATH[:size=64m,mode=1777,exec,…] → a tmpfs mount (podman's
/// defaults nosuid,nodev,noexec first). Throws sbx::Error.
Mount parse_tmpfs(const std::string& text, const std::string& what = "--tmpfs");

}  // namespace sbx::engine
