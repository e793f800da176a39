// The engine: the one facade every front end (the CLI, the API server; SDKs
// through it) includes. It owns the flows that combine the layers below —
// image store (oci/), backends (runtime/backend.h, chosen through
// runtime/backends.h), snapshots (snapshot/), GPUs (gpu/) — so that no front
// end repeats them, and it asks the Backend interface for every operation on
// a sandbox: it includes no backend's header and names no backend.
//
// Plain request structs in, plain result structs out. It never prints and
// never exits: errors are sbx::Error (common/error.h) with the exit code a
// command line should use; output of sandboxes goes to file descriptors the
// caller gives, log output through callbacks.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oci/export.h"
#include "oci/image.h"
#include "oci/auth_config.h"
#include "oci/pull.h"
#include "oci/push.h"
#include "oci/store.h"
#include "runtime/backend.h"
#include "runtime/host_support.h"
#include "runtime/linux/user_network.h"
#include "runtime/sandbox_log.h"
#include "runtime/state.h"
#include "gpu/nvidia.h"
#include "engine/build/builder.h"
#include "engine/pool.h"
#include "engine/userns.h"
#include "engine/volumes.h"
#include "snapshot/catalog.h"
#include "snapshot/checkpoint.h"
#include "snapshot/fs_snapshot.h"
#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"

namespace sbx::engine {

struct BatchRequest;  // engine/batch.h (which needs SandboxOptions, over this header)
struct BatchSummary;

/// Where the engine keeps its state.
struct Config {
  std::string root = "/var/lib/sbx";  ///< image store and snapshots (--root)
  std::string run_root = "/run/sbx";  ///< live sandbox state (--run-root)
};

// ---- host -------------------------------------------------------------------

/// What this host offers (`sbx info`).
struct HostInfo {
  std::string cgroup_mode;                                          ///< unified, hybrid or legacy
  std::vector<std::pair<std::string, std::string>> default_bounds;  ///< what → value, for people
  std::vector<runtime::RuntimeSupport> runtimes;                    ///< each backend: usable, why, features
  bool nvidia = false;               ///< an NVIDIA driver is loaded
  std::optional<gpu::NvidiaHost> gpus;  ///< discovered GPUs and driver files (when `nvidia`)
  std::string gpu_error;             ///< discovery failed: why
  std::vector<std::string> cdi_devices, cdi_errors;  ///< CDI specs found (gpu/cdi.h)
  std::string network;  ///< --network private: "usable (…)" or "NOT usable: why" (runtime/linux/sandbox_network.h)
  std::string cgroup2_mount;         ///< the cgroup2 mount point ("" on a legacy host)
  std::optional<bool> favordynmods;  ///< its favordynmods option (runtime/linux/cgroup_tune.h)
};

// ---- images -----------------------------------------------------------------

struct ImportRequest {
  std::string path;  ///< OCI layout dir, oci-archive or docker-archive
  std::string name;  ///< repository[:tag]; empty: the archive's own name
  std::function<void(const oci::ImportProgress&)> progress;  ///< optional
};

/// One entry of an image's history (`sbx history`), from its config.
struct HistoryEntry {
  std::string id;          ///< the image's id on the newest entry; empty on the others
  std::string created;     ///< RFC 3339
  std::string created_by;  ///< the instruction ("RUN /bin/sh -c …")
  std::string comment;
  bool empty_layer = false;  ///< changed only the config
  uint64_t size = 0;       ///< bytes of its layer unpacked (0 with empty_layer)
};

/// What `sbx image prune` removed.
struct ImagePruneResult {
  std::vector<std::string> deleted;  ///< image ids (build cache included)
  size_t build_cache = 0;            ///< of those, build cache
  uint64_t reclaimed = 0;            ///< bytes of unpacked layers no image uses any more
};

/// `sbx system df`: what the store holds.
struct DiskUsage {
  size_t images = 0;                 ///< listed images
  uint64_t images_size = 0;          ///< bytes of their layers (each layer once)
  uint64_t images_reclaimable = 0;   ///< of those, layers only unused untagged images hold
  size_t build_cache = 0;            ///< build cache images (steps of sbx build)
  uint64_t build_cache_size = 0;     ///< bytes of layers only the build cache holds
  size_t sandboxes = 0;              ///< sandboxes in the run root
  size_t volumes = 0;                ///< named volumes (engine/volumes.h)
  size_t volumes_unused = 0;         ///< of those, used by no sandbox
  uint64_t volumes_size = 0;         ///< bytes of their files
  uint64_t volumes_reclaimable = 0;  ///< of those, in volumes no sandbox uses
};

/// A named volume one sandbox mounts (Docker's container inspect `Mounts`).
struct VolumeMount {
  std::string name;
  std::string source;       ///< its _data dir on the host
  std::string destination;  ///< inside the sandbox
  bool read_only = false;
};

// ---- sandboxes --------------------------------------------------------------

/// `run` or `create`: the spec (spec.runtime names the backend) and how to
/// start it.
struct SandboxRequest {
  SandboxSpec spec;
  /// Native: decided with use_userns(spec, userns) when the sandbox starts;
  /// the default gives a user namespace.
  UsernsMode userns = UsernsMode::Auto;
  std::string runsc;    ///< gVisor: runsc binary; empty: from $PATH
  /// create with spec.stdin_open: the first process's stdin (native; the
  /// caller closes its copy after the call); -1: /dev/null.
  int stdin_fd = -1;
  /// Docker's restart of an ended container: replaces the ended sandbox
  /// spec.id on its writable layer (runtime::Backend::create).
  bool reuse_layer = false;
  /// NAME:/TARGET: a private, writable copy of each directory snapshot under
  /// RUN_ROOT/.snapshot-copies/<id>/<n>; run removes them when it ends,
  /// create when it fails (else the caller, or 'sbx gc' once the sandbox is gone).
  std::vector<std::string> mount_snapshots;
};

/// GPUs and devices for a spec (gpu/nvidia.h, gpu/cdi.h).
struct GpuRequest {
  std::string gpus;                  ///< --gpus: all, 0, 0,1, UUID, device=…, count=N, none
  std::vector<std::string> devices;  ///< --device: CDI names or host nodes
  std::string host_root = "/";       ///< where the host's driver files are (tests: a fake root)
  std::string runsc;                 ///< gVisor: runsc binary to check for nvproxy
};

struct RunRequest : SandboxRequest {
  runtime::RunIo io;
};

struct RunResult {
  std::string id;
  ExitStatus status;                 ///< exit code, signal, timed_out, oom_killed, …
  std::chrono::milliseconds elapsed{0};  ///< wall time from the request to the end
};

struct ExecRequest : runtime::ExecRequest {
  std::string sandbox;  ///< id, unique id prefix or name
};

struct ExecResult {
  int exit_code = 0;       ///< as `run`: the code, 124 timeout, 126/127, 128+N
  bool timed_out = false;  ///< req.timeout fired (exit_code 124)
};

/// How Engine::remove removes a sandbox (`sbx rm`, Docker's DELETE
/// /containers/{id}, AutoRemove).
struct RemoveRequest {
  bool force = false;  ///< kill it first when it runs
  /// Also its anonymous volumes (engine/volume_holds.h) that no other
  /// sandbox uses (`sbx rm -v`, Docker's ?v=1 and AutoRemove).
  bool remove_anonymous_volumes = false;
};

/// ps / rm --filter: label=KEY[=VALUE], name=NAME, status=STATUS, id=PREFIX.
struct ListRequest {
  bool all = false;  ///< also ended ones (else running and creating only)
  std::vector<std::string> filters;
};

// ---- networks ---------------------------------------------------------------

/// One user-defined network as front ends show it (`sbx network inspect`,
/// Docker's GET /networks/{id}): the network, its live sandboxes' endpoints,
/// and their names.
struct NetworkInfo {
  runtime::UserNetwork network;
  std::vector<runtime::NetworkEndpoint> endpoints;
  std::map<std::string, std::string> sandbox_names;  ///< sandbox id → its name ("" when it has none)
  /// Docker's network inspect object, plus sbx's fields (runtime::user_network_json).
  std::string json() const;
};

// ---- snapshots --------------------------------------------------------------

/// A file-system snapshot: a sandbox's writable layer as a new image.
struct FsSnapshotRequest {
  std::string sandbox;       ///< id, prefix or name; or empty with upper_dir
  std::string upper_dir;     ///< instead of a sandbox: this overlay upper dir …
  std::string parent_image;  ///< … on this image
  std::string name;          ///< new image name repository[:tag]; empty: none
};

struct DirSnapshotRequest {
  std::string sandbox;   ///< id, prefix or name; or empty with host_dir
  std::string path;      ///< directory inside the sandbox
  std::string host_dir;  ///< instead of a sandbox: this host directory
  std::string name;      ///< empty: dir-<digest prefix>
};

struct CheckpointRequest {
  std::string sandbox;         ///< id, prefix or name
  std::string name;            ///< empty: ckpt-<id>-<random>
  bool leave_running = false;  ///< resume it from the checkpoint under the same id
  std::string runsc;           ///< empty: from $PATH
};

struct RestoreRequest {
  std::string snapshot;  ///< memory snapshot name
  std::string name;      ///< new sandbox's name (count > 1: NAME-1, NAME-2, …)
  int count = 1;         ///< independent copies ("fork N")
  std::string runsc;
};

/// What gc removed.
struct GcResult {
  std::vector<std::string> removed;                 ///< state dirs, cgroups, snapshot copies
  std::vector<snapshot::SnapshotRecord> snapshots;  ///< with older_than
  oci::GcResult store;                              ///< blobs, layers, temps
};

/// The facade. Cheap to construct; holds no state besides Config, so any
/// number of engines (in any number of processes) may act at once: the
/// layers below lock what they change.
class Engine {
 public:
  explicit Engine(Config c) : cfg_(std::move(c)) {}
  const Config& config() const noexcept { return cfg_; }

  // Images (oci/store.h). Each throws sbx::Error as the store does.
  oci::ImageRecord import_image(const ImportRequest& req);
  std::vector<oci::ImageRecord> list_images();
  /// The image's `inspect` JSON (oci::image_inspect_json).
  std::string inspect_image(const std::string& ref);
  void tag_image(const std::string& ref, const std::string& name);
  /// Refused while a sandbox uses it unless `force`.
  oci::RemoveResult remove_image(const std::string& ref, bool force);
  /// Writes an image as an archive (oci/export.h).
  oci::ExportResult export_image(const std::string& ref, const std::string& out, const std::string& format,
                                 const std::string& name);
  /// Several images in one docker-archive (`docker save A B`; oci/export.h
  /// export_docker_archive): (ref, name) pairs. Returns its size in bytes.
  uint64_t export_images(const std::vector<std::pair<std::string, std::string>>& images, const std::string& out);

  // Builds (engine/build/builder.h).
  /// Builds an image from a Dockerfile in native sandboxes (each RUN a
  /// sandbox of this engine's run root), with the build cache of this store.
  /// Throws sbx::Error as build::build_image says.
  build::BuildResult build(const build::BuildOptions& req);
  /// The image's history, newest first. Throws sbx::Error for an unknown image.
  std::vector<HistoryEntry> history(const std::string& ref);
  /// Removes the build cache and, with `dangling`, images without a name
  /// that no sandbox uses; then their layers when nothing else uses them.
  ImagePruneResult prune_images(bool dangling);
  /// What images and the build cache take on disk.
  DiskUsage disk_usage();

  /// Probes runtimes (runsc: which binary; empty: $PATH), cgroups, default
  /// bounds and GPUs (`gpu_host_root`: where the host's /dev, /proc are).
  /// Never throws for a missing part: it is reported in the result.
  HostInfo host_info(const std::string& runsc, const std::string& gpu_host_root);

  // Registries (oci/pull.h, oci/push.h: OCI distribution spec over libcurl).
  /// Pulls REF into the store (progress through opts.progress); returns the
  /// stored image. Throws sbx::Error (125): unreachable registry, auth denied,
  /// unknown image, bad digest, hostile sizes; nothing unverified is stored.
  oci::ImageRecord pull(const std::string& ref, const oci::PullOptions& opts);
  /// The image `ref` names in the store, pulled first as `policy` says
  /// (podman's --pull; short names only when `policy_explicit`).
  oci::ImageRecord resolve_or_pull(const std::string& ref, oci::PullPolicy policy, bool policy_explicit,
                                   const oci::PullOptions& opts);
  /// The read-only layer dirs of a stored image, bottom first.
  std::vector<std::string> layer_dirs(const oci::ImageRecord& image);
  /// Pushes a stored image (snapshots too) to DEST (empty: its own name);
  /// returns the manifest digest.
  std::string push(const std::string& image, const std::string& dest, const oci::PushOptions& opts);
  /// Checks `creds` against REGISTRY, then stores them in the auth file
  /// (mode 0600); returns the registry's normalised name.
  std::string login(const std::string& registry, oci::RegistryOptions opts, const std::string& authfile);
  /// Removes REGISTRY's credentials (empty: every registry's); returns the
  /// normalised name. Throws sbx::Error when there were none.
  std::string logout(const std::string& registry, const std::string& authfile);

  // Sandboxes.
  /// Adds GPUs/devices to `spec` for its backend (all or nothing).
  void apply_gpus(const GpuRequest& req, SandboxSpec& spec);
  /// Runs to completion in a throw-away sandbox; nothing is left when it returns.
  RunResult run(const RunRequest& req);
  /// Starts a detached sandbox; returns its id.
  std::string create(const SandboxRequest& req);
  ExecResult exec(const ExecRequest& req);
  /// Host → sandbox (docker cp semantics).
  runtime::CopyResult copy_in(const std::string& sandbox, const std::string& host_path, const std::string& sandbox_path);
  /// Sandbox → host; holes of sparse files stay holes. `max_bytes` (0: no
  /// bound): most bytes read from the sandbox's files, holes kept as holes not
  /// counted; more: sbx::Error with errno EFBIG, and nothing of it is left.
  runtime::CopyResult copy_out(const std::string& sandbox, const std::string& sandbox_path, const std::string& host_path,
                               uint64_t max_bytes = 0);
  /// SANDBOX_PATH's lstat in the running sandbox, without copying it
  /// (Backend::stat_path). Throws sbx::Error: Unsupported when the backend
  /// has no such stat (then stat a copy_out), else as copy_out.
  runtime::PathStat stat_path(const std::string& sandbox, const std::string& sandbox_path);
  /// The full id of `ref` (id, unique prefix or name). Throws sbx::Error.
  std::string resolve(const std::string& ref);
  /// Newest first.
  std::vector<runtime::SandboxInfo> list(const ListRequest& req);
  runtime::SandboxInfo inspect(const std::string& ref);
  /// The first process's output (log.1, then log); `follow`: until it ends.
  void logs(const std::string& ref, bool follow, const std::function<void(const char*, size_t)>& out);
  /// The same as records that keep each piece's stream (stdout/stderr) and
  /// time (runtime/lifecycle.h read_log_records).
  void log_records(const std::string& ref, bool follow, const std::function<void(const runtime::LogRecord&)>& out);
  /// Until it ended; how it ended (nullopt: no end record), or until
  /// `timeout` passed (0: no limit; then nullopt).
  std::optional<runtime::EndRecord> wait(const std::string& ref, std::chrono::milliseconds timeout = {});
  /// After wait: collects what this process still holds of a sandbox it
  /// created (Backend::reap: its init or monitor is this process's child).
  /// `st`: its state as create left it (it may be removed by now). No throw.
  void reap(const runtime::SandboxState& st) noexcept;
  /// SIGTERM, then SIGKILL after `grace`. Returns the full id.
  std::string stop(const std::string& ref, std::chrono::milliseconds grace);
  /// Returns the full id.
  std::string kill(const std::string& ref, int sig);
  runtime::Stats stats(const std::string& ref);
  /// Its processes, as its backend sees them (docker top). Throws sbx::Error
  /// when it is not running.
  runtime::ProcessTable processes(const std::string& ref);
  /// Removes the sandbox with this full id (force: kills it first).
  void remove(const std::string& id, bool force) { remove(id, RemoveRequest{force, false}); }
  /// Removes the sandbox with this full id as `req` says; drops its
  /// references to the volumes its spec names (only those) and, with
  /// req.remove_anonymous_volumes, removes its anonymous volumes no other
  /// sandbox uses. Returns the names of the volumes removed. Throws
  /// sbx::Error as the backend's remove; a volume that cannot be removed is
  /// logged and left (it is dangling: `sbx volume prune`).
  std::vector<std::string> remove(const std::string& id, const RemoveRequest& req);

  // Networks (runtime/linux/user_network.h): user-defined bridge networks of
  // this engine's run root. Errors carry a kind (common/error.h ErrorKind)
  // that the Docker API maps to 400/404/409/403; nothing half-made stays.
  /// `sbx network create`, POST /networks/create. Throws: Invalid (name,
  /// subnet, gateway, egress entry), Conflict (name in use here, subnet
  /// overlapping another network or the host's, pool full).
  NetworkInfo create_network(const runtime::NetworkCreateOptions& req);
  /// `sbx network ls`, GET /networks: oldest first; `filters` as docker's:
  /// name=NAME (substring), id=PREFIX, label=KEY[=VALUE], driver=bridge.
  /// Throws Invalid for an unknown filter.
  std::vector<NetworkInfo> list_networks(const std::vector<std::string>& filters = {});
  /// By name, id or unique id prefix. Throws NotFound, Invalid (ambiguous).
  NetworkInfo inspect_network(const std::string& ref);
  /// Throws NotFound, Conflict (sandboxes on it), Forbidden (none, host, private).
  void remove_network(const std::string& ref);
  /// Removes the networks no sandbox is on (`filters` as list_networks);
  /// returns their names.
  std::vector<std::string> prune_networks(const std::vector<std::string>& filters = {});
  /// Connects running sandbox `sandbox` (native, created by `sbx create` or
  /// `sbx serve`) to a network: a new interface (eth1, …) with an address
  /// there, its names on that network's DNS. Throws NotFound, Conflict
  /// (connected already, not running, a gVisor sandbox: runsc takes its
  /// interfaces at start only, a sandbox without a user-defined network),
  /// Invalid (a bad --ip or alias).
  void connect_network(const std::string& network, const std::string& sandbox, const NetworkAttachment& opts);
  /// Removes the sandbox's interface on the network. Throws NotFound (not
  /// connected), Conflict (a gVisor sandbox that runs).
  void disconnect_network(const std::string& network, const std::string& sandbox);

  // Volumes (engine/volumes.h): named volumes in this engine's root, used by
  // sandboxes of any run root. Errors carry a kind the Docker API maps to
  // 400/404/409; nothing half-made stays.
  /// `sbx volume create`, POST /volumes/create. An existing name returns that
  /// volume unchanged (docker's). Throws Invalid (name), Unsupported (driver).
  Volume create_volume(const VolumeCreateRequest& req);
  /// `sbx volume ls`, GET /volumes: by name; `filters` as docker's: name=
  /// (substring), label=KEY[=VALUE], dangling=true|false, driver=. Throws
  /// Invalid for an unknown filter.
  std::vector<Volume> list_volumes(const std::vector<std::string>& filters = {});
  /// Throws NotFound.
  Volume inspect_volume(const std::string& name);
  /// Throws NotFound (not with `force`), Conflict (a sandbox, running or not,
  /// mounts it: also with `force`, as docker).
  void remove_volume(const std::string& name, bool force);
  /// Removes the volumes no sandbox mounts (`filters` as list_volumes).
  VolumePruneResult prune_volumes(const std::vector<std::string>& filters = {});
  /// The named volumes sandbox `id` (full id) mounts.
  std::vector<VolumeMount> sandbox_volumes(const std::string& id);
  /// Bytes of all volumes' files; counts through the optional pointers.
  uint64_t volumes_size(size_t* count, size_t* unused, uint64_t* reclaimable);

  // Snapshots (snapshot/).
  snapshot::FsSnapshotResult snapshot_fs(const FsSnapshotRequest& req);
  snapshot::SnapshotRecord snapshot_dir(const DirSnapshotRequest& req);
  snapshot::SnapshotRecord checkpoint(const CheckpointRequest& req);
  std::vector<runtime::RestoredSandbox> restore(const RestoreRequest& req);
  std::vector<snapshot::SnapshotRecord> list_snapshots();
  snapshot::SnapshotRecord remove_snapshot(const std::string& name);
  /// Into `dir` (created; must be absent or empty).
  void extract_snapshot(const std::string& name, const std::string& dir);
  /// Snapshots not used for `older_than_s` seconds.
  std::vector<snapshot::SnapshotRecord> prune_snapshots(int64_t older_than_s);

  /// Removes what killed sandboxes left, unreferenced blobs and layers, and
  /// (older_than_s >= 0) snapshots not used for that long.
  GcResult gc(int64_t older_than_s = -1);

  // Batch (engine/batch.h; issue 19).
  /// Runs every task of req.tasks in its own throw-away sandbox,
  /// req.parallel at a time; results as JSON lines to req.output and
  /// req.on_result as tasks finish. A malformed line or a task sbx cannot run
  /// gets a result (end_reason invalid / failed) and the batch goes on.
  /// Stops on SIGINT/SIGTERM/SIGHUP (blocked while it runs, read with
  /// signalfd): no new task, running ones killed and removed. Throws
  /// sbx::Error (125) when the task file or the output cannot be read/written.
  BatchSummary batch(const BatchRequest& req);

  /// `sbx system tune --favordynmods on|off` (runtime/linux/cgroup_tune.h):
  /// remounts the host's cgroup2 with favordynmods on or off, keeping its
  /// other options; idempotent. Returns the state before. Throws sbx::Error
  /// (no cgroup2 mount, not root, kernel without the option).
  bool set_favordynmods(bool on);

  // Pause (issue 17: `docker pause`; Backend::pause).
  /// Freezes every process of the running sandbox `ref` and leaves it
  /// frozen (native: cgroup freezer, as a snapshot freezes it; gVisor:
  /// `runsc pause`). Throws sbx::Error: not running, no freezer on this
  /// host, the freeze did not complete in 5 s (then it is thawed), runsc failed.
  void pause(const std::string& ref);
  /// Thaws what pause() froze (a no-op on a sandbox that is not frozen).
  void unpause(const std::string& ref);

  // Warm pool (engine/pool.h; issue 19).
  /// A pool keeping `size` sandboxes of `spec` (image resolved, config
  /// applied) set up in this engine's run root, each waiting for one command
  /// (WarmPool::take / run). Sandboxes taken from it die with it: destroy it
  /// last. Throws sbx::Error (a backend without warm sandboxes: gVisor; a
  /// terminal; size 0).
  std::unique_ptr<WarmPool> make_pool(const SandboxSpec& spec, bool userns, size_t size);

 private:
  runtime::BackendOptions backend_options(const std::string& runsc = "") const;
  /// The spec's volume mounts (type "volume", engine/volumes.h) made binds of
  /// their volumes' _data: unknown names created, an empty volume given a
  /// copy of the image's files at the mount point, a reference per volume
  /// marking it in use by spec.id. Returns the volumes' names (all or
  /// nothing: on error no reference is left). Throws sbx::Error.
  std::vector<std::string> attach_volumes(SandboxSpec& spec);
  /// Drops sandbox `id`'s references to `names`.
  void detach_volumes(const std::string& id, const std::vector<std::string>& names) noexcept;
  /// Drops sandbox `id`'s references to the volumes its spec (`mounts`, as
  /// the backend recorded them: binds of a volume's _data) names; returns
  /// the anonymous ones among them. No throw.
  std::vector<std::string> detach_spec_volumes(const std::string& id, const std::vector<spec::Mount>& mounts) noexcept;
  Config cfg_;
};

/// "TERM", "SIGKILL", "9" → the signal number. Throws sbx::Error.
int parse_signal(const std::string& text);

}  // namespace sbx::engine
