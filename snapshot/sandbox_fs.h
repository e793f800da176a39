// Where a live or stopped sandbox keeps what snapshots read: its overlay
// upper dir, the cgroups to freeze, and (gvisor) its runsc state and bundle.
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"
#include "runtime/state.h"
#include "snapshot/checkpoint.h"

namespace sbx::snapshot {

struct SandboxFs {
  std::string upper_dir;                    ///< the overlay upper dir on the host
  std::vector<std::string> freeze_cgroups;  ///< cgroups to freeze (empty when not running)
  std::vector<std::string> freeze_members;  ///< see runtime::SandboxFreezer::members
  /// The sandbox's user-namespace maps from RUN_ROOT/<id>/config.json
  /// (linux.uidMappings/gidMappings); empty when it uses the host's ids.
  std::vector<IdMapping> uid_map, gid_map;
};

/// Finds a native sandbox's upper dir: for a running one, the upperdir= of the
/// overlay mounted as its root (from /proc/PID/mountinfo); otherwise (or when
/// that path is not on the host) RUN_ROOT/<id>/upper or RUN_ROOT/<id>/*/upper.
/// For a running sandbox, what freezes it (freeze_cgroups(), which may make
/// a freezer cgroup). Throws sbx::Error when the sandbox has no disk-backed
/// upper dir (e.g. `sbx run` keeps it on a private tmpfs), or as freeze_cgroups.
SandboxFs sandbox_fs(const std::string& run_root, const runtime::SandboxState& st);

/// The user-namespace maps of sandbox `st` from RUN_ROOT/<id>/config.json
/// (linux.uidMappings/gidMappings) into `uid_map`/`gid_map`; both empty when
/// it uses the host's ids or has no config.json. Throws sbx::Error on a
/// malformed config.json.
void sandbox_id_maps(const std::string& run_root, const runtime::SandboxState& st, std::vector<IdMapping>& uid_map,
                     std::vector<IdMapping>& gid_map);

/// What freezes the running sandbox `st` (runtime::sandbox_freezer: on a
/// hybrid host a cgroup2 freezer made at the first snapshot and recorded in
/// its state.json); both empty when it is not running. Throws sbx::Error as
/// runtime::sandbox_freezer.
void freeze_cgroups(const std::string& run_root, const runtime::SandboxState& st, std::vector<std::string>& cgroups,
                    std::vector<std::string>& members);

/// The checkpoint request for a gvisor sandbox started by
/// `sbx create --runtime gvisor` or restore_gvisor (RUN_ROOT/<id>/{runsc,bundle,meta.json}).
/// Throws sbx::Error when the state dir lacks them.
GvisorCheckpointRequest gvisor_request(const std::string& run_root, const runtime::SandboxState& st);

}  // namespace sbx::snapshot
