// Where a native sandbox keeps what snapshots read: its overlay upper dir,
// the cgroups that freeze it, its user-namespace maps (moved from
// snapshot/: the native backend's writable_layer, runtime/backend.h).
#pragma once
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/state.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// Finds a native sandbox's upper dir: for a running one, the upperdir= of the
/// overlay mounted as its root (from /proc/PID/mountinfo); otherwise (or when
/// that path is not on the host) RUN_ROOT/<id>/upper or RUN_ROOT/<id>/*/upper.
/// For a running sandbox, what freezes it (freeze_cgroups(), which may make
/// a freezer cgroup). Throws sbx::Error when the sandbox has no disk-backed
/// upper dir (e.g. `sbx run` keeps it on a private tmpfs), or as freeze_cgroups.
WritableLayer native_writable_layer(const std::string& run_root, const SandboxState& st);

/// The user-namespace maps of sandbox `st` from RUN_ROOT/<id>/config.json
/// (linux.uidMappings/gidMappings) into `uid_map`/`gid_map`; both empty when
/// it uses the host's ids or has no config.json. Throws sbx::Error on a
/// malformed config.json.
void sandbox_id_maps(const std::string& run_root, const SandboxState& st, std::vector<IdMapping>& uid_map,
                     std::vector<IdMapping>& gid_map);

/// What freezes the running sandbox `st` (sandbox_freezer: on a hybrid host a
/// cgroup2 freezer made at the first snapshot and recorded in its
/// state.json); both empty when it is not running. Throws sbx::Error as
/// sandbox_freezer.
void freeze_cgroups(const std::string& run_root, const SandboxState& st, std::vector<std::string>& cgroups,
                    std::vector<std::string>& members);

}  // namespace sbx::runtime
