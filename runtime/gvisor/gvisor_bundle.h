// Pieces of a gVisor sandbox shared by `sbx run --runtime gvisor`
// (runtime/gvisor/gvisor_backend.cpp) and long-lived gVisor sandboxes
// (runtime/gvisor/gvisor_lifecycle.cpp): the bundle's rootfs and config, runsc's
// cgroups, and reading runsc's errors. runsc: https://gvisor.dev/docs/.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "runtime/linux/run_command.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime::gvisor {

/// True when `p` is an executable file for us (access X_OK).
bool is_executable(const std::string& p);

/// Whether a gVisor sandbox has NVIDIA GPUs: --nvproxy among its runsc flags,
/// or /dev/nvidia* devices in `bundle`/config.json (checkpoints refuse such
/// sandboxes: runsc cannot save GPU state). Throws sbx::Error when the config
/// is corrupt.
bool sandbox_has_gpus(const std::vector<std::string>& runsc_flags, const std::string& bundle);

/// runsc commands run to completion (runtime/linux/run_command.h).
using runtime::run_quiet;
using runtime::run_with_output;

/// The last bytes of a log, for messages (common/fs.h).
using fs::read_tail;

/// Extracts the "msg" values of runsc's JSON log lines at level error.
std::string runsc_errors(const std::string& log);

/// Builds the bundle's rootfs at `target` (in the caller's private mount
/// namespace): an overlay of the image layers (bottom first in `layers`)
/// with its upper dir on a small private tmpfs at `scratch`. runsc's gofer
/// creates mount points for volumes there; the sandbox's own writes go to
/// runsc's memory overlay (--overlay2=root:memory). With `disk_bytes` (--disk,
/// bytes; 0: none) the tmpfs gets that size and runsc must run with
/// --overlay2=none, so writes land there and hit ENOSPC at the limit.
/// Throws sbx::Error.
void mount_rootfs(const std::vector<std::string>& layers, const std::string& scratch, const std::string& target,
                  uint64_t disk_bytes = 0);

/// Resolves process.user against the image's /etc/passwd and /etc/group
/// under `rootfs` (as the native backend does inside the sandbox) and sets
/// uid, gid, supplementary groups and a default HOME. Throws sbx::Error.
void resolve_process_user(Process& p, const std::string& rootfs);

/// Read-write volumes of a gVisor sandbox: runsc's gofer writes
/// them as host root, so a file the sandbox makes set-uid there would be
/// set-uid host root. In the monitor's private mount namespace, each such
/// volume (not ro, not `idmap=host`) is replaced by an idmapped copy attached
/// at `at_dir`/vol<N>, idmapped with runtime/linux/userns.h
/// host_ids_volume_userns (the gofer's root writes as the source's owner or an
/// unprivileged id; host id 0 is not mapped). `idmap=host` is
/// dropped from the options runsc sees. Throws sbx::Error.
void idmap_volumes_for_gvisor(std::vector<Mount>& mounts, const std::string& at_dir);

/// The cgroups runsc makes for linux.cgroupsPath "/NAME": NAME at the root of
/// every mounted hierarchy (v1 controllers, and the unified one).
std::vector<std::string> runsc_cgroup_dirs(const std::string& name);

/// --pids-limit inside gVisor: also given to gVisor's kernel as RLIMIT_NPROC
/// (runsc's pids cgroup only holds the sentry); the host limit gets head room.
void apply_pids_limit_as_nproc(SandboxSpec& s);

/// What a pids limit `limit` (> 0, tasks) becomes under gVisor
/// (apply_pids_limit_as_nproc): `nproc` for gVisor's kernel (RLIMIT_NPROC,
/// soft and hard; a lower one already set wins) and `host_pids_max` for the
/// host pids cgroup that holds the sentry, gofer and stubs. Pure.
struct GvisorPidsBounds {
  uint64_t nproc = 0;
  int64_t host_pids_max = 0;
};
GvisorPidsBounds gvisor_pids_bounds(int64_t limit);

/// Where the writes to a gVisor sandbox's root file system go.
enum class RootWrites {
  Memory,    ///< runsc's memory-backed overlay (--overlay2=root:memory): nothing reaches the host
  Host,      ///< through the gofer to the rootfs dir itself (--overlay2=none): --disk, OCI bundles
  ReadOnly,  ///< root.readonly: no overlay flag
};

/// The global runsc flags every sbx front end starts a gVisor sandbox with
/// (sbx run, sbx create/restore, sbx-runc): the network (none; host;
/// Private: runsc's own netstack in the namespace config.json names,
/// --network=sandbox), where the rootfs writes go, and --nvproxy for GPUs.
/// runsc's flags: https://gvisor.dev/docs/user_guide/. Pure.
std::vector<std::string> runsc_sandbox_flags(NetworkMode network, RootWrites writes, bool nvproxy = false);

/// When runsc's `errors` (runsc_errors) say that `cmd` could not be started,
/// throws sbx::Error with exit code 127 (not found) or 126 (not executable),
/// as the native backend; otherwise returns.
void throw_if_command_error(const std::string& errors, const std::string& cmd);

/// gVisor writes to a host regular file given as stdout/stderr at its own
/// offset, starting from 0 (Debian's runsc 20221219): `(echo a; sbx exec ID
/// echo b) > f` would overwrite "a". For such an fd (a regular file without
/// O_APPEND) FileOutput makes a pipe for runsc instead (dup2 write_end onto
/// the child's 1/2), and the parent copies what arrives with write(2), which
/// uses and advances the file's shared offset. Any other fd: nothing to do
/// (read_end/write_end stay -1). Not copyable.
struct FileOutput {
  int target = -1;  ///< the caller's fd (a regular file), -1: not relayed
  int read_end = -1, write_end = -1;

  explicit FileOutput(int fd) noexcept;
  ~FileOutput();
  FileOutput(const FileOutput&) = delete;
  FileOutput& operator=(const FileOutput&) = delete;
  /// In the parent after fork: closes the write end, makes the read end non-blocking.
  void parent_side() noexcept;
  /// Copies what is there to `target`; false at EOF (read_end is then closed).
  bool pump() noexcept;
  /// After the child ended: copies the rest, waiting up to `ms` for more.
  void drain(int ms) noexcept;
};

/// Pumps two FileOutputs on a thread of its own, for callers whose wait loop
/// cannot poll them (sbx run's wait_runsc): starts after the fork, in the
/// parent (after parent_side()); finish() stops it once the pipes reach EOF
/// or `ms` after the child ended, whichever is first. No-op when neither is
/// relayed.
class FileOutputPump {
 public:
  FileOutputPump(FileOutput& out, FileOutput& err);
  ~FileOutputPump() { finish(0); }
  FileOutputPump(const FileOutputPump&) = delete;
  FileOutputPump& operator=(const FileOutputPump&) = delete;
  void finish(int ms) noexcept;

 private:
  FileOutput &out_, &err_;
  std::atomic<int64_t> stop_at_{0};  ///< steady-clock ms; 0: not yet
  std::thread thread_;
};

}  // namespace sbx::runtime::gvisor
