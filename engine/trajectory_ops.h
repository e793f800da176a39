// Engine: the flows of recorded sandboxes (docs/trajectory.md) — create with
// recording, read a trajectory, branch from a step, replay — over the
// Engine facade (engine/engine.h). The recording of each step itself is in
// the engine's exec, cp and snapshot flows (engine/recording.h).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/trajectory.h"

namespace sbx::engine::trajectory {

/// `sbx create --record`: creates the sandbox of `req` with a trajectory
/// (its header written before the id is returned). The sandbox gets a fixed
/// hostname and PYTHONHASHSEED=0 unless set (pin_reproducible). `redact`:
/// env names (exact or a regex of the whole name) stored as digests only;
/// "stdin": exec stdin too. Throws what Engine::create throws; when the
/// trajectory cannot be written the sandbox is removed.
std::string create_recorded(Engine& engine, SandboxRequest req, const std::vector<std::string>& redact,
                            const nlohmann::json& parent = nullptr);

/// The label that asks for recording from the APIs that only carry labels
/// (the Docker API's container create, E2B's metadata): "1" or "true".
constexpr const char* kRecordLabel = "sbx.record";
/// With kRecordLabel: the redact list, comma-separated (as --redact).
constexpr const char* kRedactLabel = "sbx.record.redact";

/// Creates the sandbox of `req`, recorded (create_recorded) when its labels
/// hold kRecordLabel "1"/"true" (redact list: kRedactLabel), else plainly
/// (Engine::create). Returns its id. Throws sbx::Error (InvalidArgument)
/// for another value of the label, or a redact label without it; else what
/// create throws.
std::string create_labelled(Engine& engine, const SandboxRequest& req);

/// The trajectory dir of a recorded sandbox. Throws sbx::Error (125) when
/// it records none.
std::string dir_of_sandbox(Engine& engine, const std::string& ref);

/// A trajectory: `source` a file (trajectory.jsonl, an export archive
/// unpacked under `scratch`, which the caller removes, or a mini-swe-agent
/// file) or a recorded sandbox. `file` (optional): set to the trajectory
/// file read. Throws sbx::Error (125).
Trajectory read(Engine& engine, const std::string& source, const std::string& scratch, std::string* file = nullptr);

/// A sandbox from a trajectory's header: the recorded spec on `image` (when
/// given) or the recorded image id (else its ref), named `name`; recorded
/// when `record` (its header's parent: `parent`). Returns its id. Throws
/// sbx::Error (125): no spec, the image not in the store.
std::string create_from(Engine& engine, const nlohmann::json& header, const std::string& image, const std::string& name,
                        bool record, const nlohmann::json& parent);

/// `sbx branch`: new sandboxes with the files of a trajectory's step.
struct BranchRequest {
  std::string source;  ///< a recorded sandbox (id, prefix, name) or a trajectory file/archive
  int at = 0;          ///< the step (1-based) whose resulting files they get
  int count = 1;       ///< how many
  std::string name;    ///< name prefix: NAME (one) or NAME-1, NAME-2, …; empty: none
  /// Called with each sandbox's id as soon as it is made (optional): where
  /// its init is the caller's child (sbx serve), the caller starts reaping
  /// it, as a branch that fails later removes what it made.
  std::function<void(const std::string&)> on_created;
};

/// Makes req.count sandboxes from the recorded image and spec, each with the
/// files of step req.at (files_at) in place and a trajectory of its own
/// (header: the parent; first step: a "branch" step with those files).
/// Processes are not restored. Returns their ids. Throws sbx::Error (125):
/// bad trajectory, step out of range, a missing checkpoint object, a step
/// not restorable; none of them is left then.
std::vector<std::string> branch(Engine& engine, const BranchRequest& req);

/// One step of a replay.
struct ReplayStep {
  int step = 0;
  std::string kind;        ///< exec, cp_in, cp_out, snapshot, branch
  std::string what;        ///< the command or path, for people
  std::string result;      ///< "match", "differs" or "skipped"
  std::string difference;  ///< with differs: which stream, the first differing byte and around it
  std::string note;        ///< why skipped, what could not be reproduced
};

struct ReplayRequest {
  std::string source;  ///< a trajectory file/archive or a recorded sandbox
  std::string image;   ///< instead of the recorded image
  int until = 0;       ///< the last step to replay (0: all)
  bool keep = false;   ///< keep the sandbox (ReplayResult::sandbox)
  std::vector<std::string> tolerate_regex;         ///< stdout/stderr lines matching one are not compared
  std::vector<std::string> tolerate_path;          ///< changed files whose path matches one are not compared
  std::function<void(const ReplayStep&)> on_step;  ///< each step as it ends (optional)
  /// Called with the replay's sandbox id as soon as it is made (optional;
  /// as BranchRequest::on_created).
  std::function<void(const std::string&)> on_created;
};

struct ReplayResult {
  std::string sandbox;  ///< with keep: its id
  std::vector<ReplayStep> steps;
  int first_divergence = 0;  ///< the step that differed (0: none)
};

/// `sbx replay`: a fresh sandbox (create_from), the steps run again and
/// compared with the record; stops at the first step that differs. Throws
/// sbx::Error (125): a bad trajectory, --until out of range, the image not
/// in the store; the sandbox is removed then (unless keep).
ReplayResult replay(Engine& engine, const ReplayRequest& req);

}  // namespace sbx::engine::trajectory
