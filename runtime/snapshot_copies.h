// Where `--mount-snapshot` puts a sandbox's private copy of a directory
// snapshot: RUN_ROOT/.snapshot-copies/<sandbox id>/<n>. The copy lives as long
// as the sandbox; these helpers remove it, and find those of killed runs.
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

inline constexpr const char* kSnapshotCopiesDir = ".snapshot-copies";

/// Removes one sandbox's copies dir (recursively). No throw.
void remove_snapshot_copies(const std::string& dir) noexcept;

/// Removes the copies of sandbox `id` (RUN_ROOT/.snapshot-copies/<id>), and
/// RUN_ROOT/.snapshot-copies itself once it is empty: what `sbx rm` of a
/// sandbox made with `create --mount-snapshot` does. No throw.
void remove_sandbox_snapshot_copies(const std::string& run_root, const std::string& id) noexcept;

/// Removes RUN_ROOT/.snapshot-copies/<id> of sandboxes whose state dir
/// RUN_ROOT/<id> is gone and that are older than `min_age_s` (a run copies
/// before its state dir exists). Returns the removed paths. No throw.
std::vector<std::string> gc_snapshot_copies(const std::string& run_root, int min_age_s = 60) noexcept;

}  // namespace sbx::runtime
