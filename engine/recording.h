// Engine: the recorder of a sandbox's trajectory (engine/trajectory.h), used
// by the engine's exec, cp and snapshot flows of a recorded sandbox.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/exec_request.h"

namespace sbx::engine::trajectory {

/// Appends the steps of one recorded sandbox. Cheap to construct.
class Recorder {
 public:
  /// `tdir`: the sandbox's trajectory dir; `redact`: the header's redact
  /// list; `upper`: returns the sandbox's overlay upper dir on the host, or
  /// throws sbx::Error saying why it has none (then steps are marked not
  /// restorable with that reason).
  Recorder(std::string tdir, std::vector<std::string> redact, std::function<std::string()> upper)
      : tdir_(std::move(tdir)), redact_(std::move(redact)), upper_(std::move(upper)) {}

  /// Runs `run` with `req`'s stdout/stderr (and stdin, when it has one)
  /// through the recorder's pipes, then appends the exec step (with its
  /// checkpoint). Returns run's exit code; `timed_out` as ExecResult's.
  /// Throws what `run` throws (nothing is recorded then). A failure to
  /// record is logged as a warning: the command ran.
  int exec(const runtime::ExecRequest& req, const std::function<int(const runtime::ExecRequest&)>& run,
           bool* timed_out);

  /// Appends `step` (a JSON object with "kind"; "step" is added), with a
  /// checkpoint of the writable layer when `state_may_change`. Throws sbx::Error.
  void append(nlohmann::json step, bool state_may_change);

  const std::string& dir() const { return tdir_; }

 private:
  std::string upper_dir();
  std::string tdir_;
  std::vector<std::string> redact_;
  std::function<std::string()> upper_;
};

/// The recorder of sandbox `id` (full id) in `run_root`; null when it
/// records nothing. Throws sbx::Error when its trajectory has no readable header.
std::unique_ptr<Recorder> recorder_for(const std::string& run_root, const std::string& id);

/// Appends a snapshot step (type fs, dir or memory) to sandbox `id`'s
/// trajectory, when it records one. A failure is logged, not thrown.
void record_snapshot(const std::string& run_root, const std::string& id, const std::string& type,
                     const std::string& snapshot_id, const std::string& name) noexcept;

/// The manifest of a copy (a file or a directory tree at `host`): the entry
/// of `host` itself (path "") and, for a directory, every entry under it, as
/// [{"path" (relative), "type" (file, dir, symlink), "mode", "size",
/// "sha256", "target"}]; other file types are left out. Each regular file is
/// stored as an object in `objects` when `store` (else only hashed). Adds the
/// files' bytes to `total`. Throws sbx::Error when an object cannot be stored.
nlohmann::json copy_manifest(const std::string& host, const std::string& objects, bool store, uint64_t& total);

/// The bytes of the regular files at `host` (a file, or a tree; symlinks not
/// followed); 0 for anything else or what cannot be read.
uint64_t tree_bytes(const std::string& host);

}  // namespace sbx::engine::trajectory
