// Trajectories: what a recorded sandbox (`sbx create --record`) did, step by
// step, as a JSON-lines file (docs/trajectory.md: the format, version 1), and
// the file-system checkpoints that let `sbx branch` start new sandboxes from
// any step. The engine's exec and cp flows append to it (engine/sandboxes.cpp),
// so every front end records through the same code.
//
// On disk, for sandbox ID: RUN_ROOT/ID/trajectory/
//   trajectory.jsonl   header line, then one line per step
//   objects/SHA256     content of checkpointed and copied-in files, stdin;
//                      one file per distinct content (deduplicated)
//   upper.state        what the writable layer looked like after the last
//                      step (to find what the next step changed)
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::engine::trajectory {

/// The format version this sbx writes and reads (docs/trajectory.md).
constexpr int kFormatVersion = 1;
/// Most bytes of stdout, stderr and stdin kept in a step (each); beyond it
/// only the size and the sha256 of the whole.
constexpr size_t kStreamBound = 64 * 1024;
/// Most bytes of a `cp` into the sandbox whose content is kept (for replay).
constexpr uint64_t kCopyContentBound = 64ull << 20;

/// A trajectory read back: its header and its steps, in order.
struct Trajectory {
  nlohmann::json header;
  std::vector<nlohmann::json> steps;
  std::string objects_dir;  ///< where its objects are ("" when unknown)
};

/// RUN_ROOT/ID/trajectory.
std::string dir_of(const std::string& run_root, const std::string& id);
/// True when sandbox ID records a trajectory.
bool recorded(const std::string& run_root, const std::string& id);

/// Parses a trajectory file's text. Throws sbx::Error (125) naming `what` and
/// the line: not JSON, no header or the wrong format version, a step out of
/// order, a last line without its newline (a truncated file).
Trajectory parse(const std::string& text, const std::string& what);

/// True when `name` is an env name that looks like a secret (KEY, TOKEN,
/// SECRET, PASSWORD, PASSWD, CREDENTIAL, case-insensitive) or matches one of
/// `redact`: an exact name or an ECMAScript regex matching the whole name.
bool is_secret_name(const std::string& name, const std::vector<std::string>& redact);

/// KEY=VALUE entries as the trajectory stores them: [{"name","value"}] or, for
/// a secret name, [{"name","sha256"}] (never the value).
nlohmann::json env_json(const std::vector<std::string>& env, const std::vector<std::string>& redact);

/// Replaces FILE's content with `data`, in place and without fsync: for the
/// recorder's own bookkeeping (upper.state, seq, upper_dir), which only the
/// holder of the trajectory's lock reads or writes, and which a crash may
/// lose or tear (the next step then sees every entry of the layer as changed,
/// or counts the steps). Written over the old bytes and then truncated to
/// the new size, never renamed over nor truncated to zero: on ext4
/// (auto_da_alloc) both of those start a writeback of the file and cost
/// milliseconds per step. Throws sbx::Error.
void write_scratch_file(const std::string& path, std::string_view data);

/// The first line of FILE (without reading the rest). Throws sbx::Error.
std::string read_header_line(const std::string& file);

/// Appends one whole line (`j` dumped, newline) to FILE with one write(2) on
/// an O_APPEND descriptor (atomic for readers; not fsync'd). Throws sbx::Error.
void append_line(const std::string& file, const nlohmann::json& j);

/// Stores `data` as an object (OBJECTS/SHA256, written once); returns the sha256.
std::string put_object(const std::string& objects_dir, const std::string& data);

/// Copies host file `path` into the objects (deduplicated); returns its sha256.
std::string put_object_file(const std::string& objects_dir, const std::string& path);

/// The writable layer's change since the last call (upper dir scan): compares
/// every entry's type, mode, size, mtime and ctime with upper.state in `tdir`,
/// stores the content of changed regular files as objects, and rewrites
/// upper.state. Returns the checkpoint object ({"files":[…],"deleted":[…],
/// "bytes":N}) or null when nothing changed. Throws sbx::Error.
nlohmann::json checkpoint_upper(const std::string& tdir, const std::string& upper_dir);

/// The file state after step `at` (1-based): every checkpoint up to it folded
/// into path → entry ({"type":"file"|"dir"|"symlink"|"deleted", …}). Throws
/// sbx::Error (125): `at` out of range, a step up to it not restorable.
std::map<std::string, nlohmann::json> files_at(const Trajectory& t, int at);

/// Writes the files of `state` (files_at) under `dir` (created) from the
/// objects in `objects_dir`; returns the paths to delete in the sandbox.
/// Throws sbx::Error (125) when an object is missing.
std::vector<std::string> materialize(const std::map<std::string, nlohmann::json>& state,
                                     const std::string& objects_dir, const std::string& dir);

/// A mini-swe-agent trajectory file (JSON: "messages", each assistant
/// message's ```bash block an action, the next message's <returncode> and
/// <output> its observation) as exec steps: `sh -c '{ ACTION; } 2>&1'`,
/// stdout the observed output (null when the observation was shortened).
/// The header has no image or spec: a replay names --image. Throws
/// sbx::Error (125) when it holds no action with an observation.
Trajectory import_mini_swe_agent(const nlohmann::json& j, const std::string& what);

/// Reads a trajectory: FILE.jsonl (objects in its directory's objects/), or
/// a mini-swe-agent trajectory (import_mini_swe_agent), or
/// an archive made by `sbx trajectory export` (unpacked into `scratch`,
/// which the caller removes). Throws sbx::Error (125).
Trajectory load(const std::string& path, const std::string& scratch);

/// Writes the trajectory dir `tdir` (its file and objects) as a tar to `out`
/// (atomically: a temp file renamed). Returns bytes written. Throws sbx::Error.
uint64_t export_tar(const std::string& tdir, const std::string& out);

/// A scratch dir under `parent` (.trajectory-XXXXXX), removed with
/// everything in it when it goes out of scope. Throws sbx::Error.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& parent);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

/// True when the sandbox of `spec` sees CLOCK_MONOTONIC and CLOCK_BOOTTIME
/// start at zero: native with a time namespace (runtime/linux/time_namespace.h),
/// gVisor always. The header's "timens".
bool clocks_start_at_zero(const SandboxSpec& spec);

/// The header a recorded sandbox's trajectory starts with.
nlohmann::json make_header(const SandboxSpec& spec, const std::vector<std::string>& redact);

/// Pins what is cheap to pin for a recorded sandbox: a fixed hostname when it
/// has the default one (its id prefix), PYTHONHASHSEED=0 and
/// SOURCE_DATE_EPOCH (now, in seconds) unless set, and a time namespace
/// (runtime::kTimeNamespaceAnnotation "true") unless the spec has the
/// annotation already; all stay in the recorded spec, so a replay or branch
/// gets the recorded values.
void pin_reproducible(SandboxSpec& spec);

}  // namespace sbx::engine::trajectory
