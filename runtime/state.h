// Per-sandbox state under the run root (default /run/sbx, --run-root).
//
// One directory per sandbox, RUN_ROOT/<id>/ (id: 64 hex chars):
//   state.json   what sbx knows: {"id","name","image_id","image_ref","runtime",
//                "status","pid","pid_start","created_ms","started_ms","cgroups",
//                "labels","command","timeout_ms","idle_timeout_ms","creator_pid",
//                "creator_start","creator_shared","owner_pid","owner_start"}; written atomically
//                (temp + rename) under `lock`.
//   config.json  the sandbox's SandboxSpec as an OCI runtime-spec config.json
//                (oci/runtime_config.h): what it was started with (inspect, exec).
//   lock         flock(2): exclusive while state.json is changed or the sandbox
//                is removed; nothing holds it while a sandbox merely runs.
//   snapshot.lock  flock(2) held by `sbx snapshot`/`snapshot-dir` while they
//                freeze and read the sandbox (one at a time per sandbox).
//   end          written by the sandbox's own init (runtime/native/holder.h; on gVisor
//                its monitor, runtime/gvisor/gvisor_lifecycle.h) when the sandbox ends:
//                "<reason> <exit_code> <signal> <unix ms>\n", reason one of exit,
//                signal, timeout, idle, killed, oom, failed. Atomic (temp+link).
//   activity     its mtime is the last exec activity (idle timeout).
//   ctr.log, ctr.log.1  stdout and stderr of the first process as records (runtime/sandbox_log.h),
//                bounded; log, log.1: the raw log of sandboxes from before that format.
//   fs/upper, fs/work  the overlay's disk-backed upper dir (snapshots read it).
//   mnt/         where the sandbox's mount namespace stages its rootfs (a
//                tmpfs there is visible only inside the sandbox).
// RUN_ROOT/.names/<name> is a symlink to the id: creating it with symlink(2)
// makes name uniqueness atomic across concurrent creates.
// RUN_ROOT/.new-<id> is a create before its state.json exists (renamed to
// <id> once it does); RUN_ROOT/.trash-<id> is an `rm` half-way. `gc` removes
// both once nobody works on them (a remover holds flock(2) on the directory
// itself while it empties it, and gc passes over one that is held). A sandbox
// with creator_pid != 0 was made by `sbx create`; one with 0 by `sbx run`,
// whose sbx (owner_pid) removes the dir itself when the run ends: gc removes
// it only once that sbx is gone too (killed).
//
// Nothing in these files is trusted blindly: `ps`/`inspect` check that the
// recorded pid is still the same process (pid + start time from /proc/PID/stat).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/exit_status.h"

namespace sbx::runtime {

/// How a sandbox ended, as its init (or `sbx rm -f`/`kill`) recorded it.
struct EndRecord {
  EndRecord() = default;
  EndRecord(std::string r, int code, int sig, int64_t ms, std::optional<ResourceUsage> u = std::nullopt)
      : reason(std::move(r)), exit_code(code), signal(sig), ended_ms(ms), usage(u) {}
  std::string reason;   ///< "exit", "signal", "timeout", "idle", "killed", "oom", "failed"
  int exit_code = -1;   ///< the first process's code (128+N for signal N); -1 unknown
  int signal = 0;       ///< N when a signal ended it
  int64_t ended_ms = 0; ///< unix time in ms
  /// What the workload used, when the recorder knew it (the holder's
  /// getrusage(RUSAGE_CHILDREN): cpu, max RSS of one process, blocks; as the
  /// optional fields 5–8 of DIR/end).
  std::optional<ResourceUsage> usage;
};

struct SandboxState {
  std::string id;
  std::string name;
  std::string image_id;
  std::string image_ref;
  std::string runtime = "native";  ///< its backend's name (runtime/backends.h backend_for picks it by this)
  // (gVisor: `pid` is the sandbox's monitor, runtime/gvisor/gvisor_lifecycle.h)
  std::string status = "running";  ///< as written: "creating", "running", "stopped"
  pid_t pid = 0;             ///< host pid of the sandbox's init
  uint64_t pid_start = 0;    ///< its start time (/proc/PID/stat field 22), against pid reuse
  int64_t created_ms = 0;    ///< unix time in ms
  int64_t started_ms = 0;    ///< unix time in ms, 0 until running
  std::vector<std::string> cgroups;  ///< absolute cgroup dirs, one per hierarchy
  std::map<std::string, std::string> labels;
  std::vector<std::string> command;  ///< the first process's argv (empty: holder only)
  int64_t timeout_ms = 0;
  int64_t idle_timeout_ms = 0;
  pid_t creator_pid = 0;        ///< the `sbx create` that is building it (status "creating")
  uint64_t creator_start = 0;
  /// The creator had other threads (`sbx serve` creates in its own process):
  /// `rm -f` of a creating sandbox then kills its init, not the creator.
  bool creator_shared = false;
  /// The `sbx run` that removes this dir when its run ends (0: a created
  /// sandbox, or a state written by an older sbx). Until that process is gone,
  /// no other sbx's gc touches the dir, even once the sandbox's init has ended.
  pid_t owner_pid = 0;
  uint64_t owner_start = 0;   ///< its start time (/proc/PID/stat field 22)
};

/// Writes DIR/state.json atomically. Throws sbx::Error.
void write_state(const std::string& dir, const SandboxState& st);

/// Reads DIR/state.json. Throws sbx::Error when missing or malformed.
SandboxState read_state(const std::string& dir);

/// Start time of a process (clock ticks since boot), 0 when it does not exist
/// or is a zombie (a zombie is dead for every purpose of sbx).
uint64_t process_start_time(pid_t pid);

/// True when the state's init process still exists (same pid and start time).
bool state_alive(const SandboxState& st);

/// True when the state's creator (creator_pid, same start time) still exists.
bool creator_alive(const SandboxState& st);

/// read_state for a decision that a "creating" sandbox's creator is gone
/// (status "dead", gc): a state that says "creating" with its creator gone is
/// read once more. The creator may have written "running" and exited between
/// the first read and the check (seen: gc removed just-created sandboxes of
/// `sbx serve`'s forked creates, about 1 in 300 at 8 at once); once it is
/// gone it writes nothing more, so the second read is final. Throws
/// sbx::Error as read_state.
SandboxState read_state_settled(const std::string& dir);

/// A pidfd (pidfd_open(2)) for the state's init (native: the holder; gVisor:
/// the monitor), or -1 when it is not (any more) that process. Opened first,
/// checked second: the pidfd then pins the process that was checked. The
/// caller closes it. No throw.
int open_init_pidfd(const SandboxState& st) noexcept;

/// Writes `end` as JSON to `path` (atomically: temp file + rename, mode 0644),
/// the keys of `sbx inspect`'s State: {"Reason", "ExitCode", "Signal",
/// "FinishedAt" (RFC 3339), "OomKills", "PidsMaxHits", and the accounting
/// "CpuMs", "MaxRssBytes", "IoReadBytes", "IoWriteBytes", "DurationMs"}. For `sbx run
/// --end-record FILE`: the end reason a program can trust (the workload
/// controls its own stderr and exit code). Throws sbx::Error naming the path.
void write_end_record_json(const std::string& path, const EndRecord& end, uint64_t oom_kills = 0,
                           uint64_t pids_max_hits = 0, const ResourceUsage& usage = {});

/// Reads DIR/end, the init's record of how the sandbox ended; nullopt when absent.
std::optional<EndRecord> read_end(const std::string& dir);

/// Writes DIR/end atomically unless it exists already (the first record wins:
/// the init's own reason beats a later "killed"). No throw; returns false when
/// it was not written.
bool write_end_if_absent(const std::string& dir, const EndRecord& end);

/// A sandbox's state as `ps`/`inspect` report it, derived from the files and
/// the kernel (never the file alone).
struct SandboxInfo {
  SandboxState state;
  std::string dir;
  /// "creating" (a live sbx is building it), "running", "exited" (ended; `end`
  /// says how), "dead" (its builder or init vanished without a record: only
  /// `rm` / `gc` are left to do).
  std::string status;
  std::optional<EndRecord> end;
  uint64_t oom_kills = 0;  ///< from the sandbox's memory cgroup, when it still exists
  /// What it used: running, so far (runtime/linux/cgroup_stats.h live_usage);
  /// ended, the end record's, with the cgroup's peak while it still exists.
  ResourceUsage usage;
};

/// Derives the truth about the sandbox in DIR. Throws sbx::Error when DIR holds
/// no readable state.json.
SandboxInfo inspect_dir(const std::string& dir);

/// Paths of one run root.
std::string sandbox_dir(const std::string& run_root, const std::string& id);

/// A fresh sandbox id: 64 random hex chars (as docker/podman). Throws
/// sbx::Error when getrandom(2) fails.
std::string new_sandbox_id();

/// Touches STATE_DIR/activity (utimensat, creating it): marks exec activity
/// for the idle timeout (the native holder and the gVisor monitor read its
/// mtime). No throw.
void touch_activity(const char* state_dir) noexcept;

/// Ids of every sandbox directory under `run_root` (64-hex names), sorted.
std::vector<std::string> list_ids(const std::string& run_root);

/// Finds a sandbox by full id, name or unique id prefix (as podman). Throws
/// sbx::Error (exit code 125) "no such sandbox 'x'" or "'x' is ambiguous".
std::string resolve_id(const std::string& run_root, const std::string& ref);

/// Claims `name` for `id` (RUN_ROOT/.names/<name> -> id), atomically. A name
/// whose sandbox dir is gone is reclaimed. Throws sbx::Error when taken or
/// invalid ([a-zA-Z0-9][a-zA-Z0-9_.-]*, as docker).
void claim_name(const std::string& run_root, const std::string& name, const std::string& id);

/// Drops the name link if it still points at `id`. No throw.
void release_name(const std::string& run_root, const std::string& name, const std::string& id);

/// Throws sbx::Error (exit 125) unless `name` is a valid sandbox name
/// ([a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 128 chars, as docker): no '/', "..",
/// newline or other byte that could reach a path or a listing. The one check
/// for `run --name` and `create --name` (claim_name calls it).
void validate_name(const std::string& name);

/// claim_name for the lifetime of a scope (`sbx run --name`: the name is
/// unique among live sandboxes while the run lasts; `gc` drops a name whose
/// sandbox dir is gone after a crash). An empty name claims nothing.
class ScopedName {
 public:
  ScopedName(std::string run_root, std::string name, std::string id);
  ~ScopedName();
  ScopedName(const ScopedName&) = delete;
  ScopedName& operator=(const ScopedName&) = delete;

 private:
  std::string run_root_, name_, id_;
  int lock_fd_ = -1;  ///< flock(2) on RUN_ROOT/.names/.<name>.lock while it runs
};

/// Removes a directory tree without following symlinks and without crossing
/// into other mounts (a mount point inside is detached first, MNT_DETACH).
/// No throw: returns 0 or the first errno.
int remove_tree(const std::string& path) noexcept;

/// Unix time in ms.
int64_t now_ms();

}  // namespace sbx::runtime
