// Where a live or stopped sandbox keeps what snapshots read: its overlay
// upper dir, the cgroups to freeze, and (gvisor) its runsc state and bundle.
#pragma once
#include <string>
#include <vector>

#include "runtime/spec.h"
#include "runtime/state.h"
#include "snapshot/checkpoint.h"

namespace sbx::snapshot {

struct SandboxFs {
  std::string upper_dir;                    ///< the overlay upper dir on the host
  std::vector<std::string> freeze_cgroups;  ///< freezable cgroups (empty when not running)
  /// The sandbox's user-namespace maps from RUN_ROOT/<id>/config.json
  /// (linux.uidMappings/gidMappings); empty when it uses the host's ids.
  std::vector<IdMapping> uid_map, gid_map;
};

/// Finds a native sandbox's upper dir: for a running one, the upperdir= of the
/// overlay mounted as its root (from /proc/PID/mountinfo); otherwise (or when
/// that path is not on the host) RUN_ROOT/<id>/upper or RUN_ROOT/<id>/*/upper.
/// For a running sandbox, the freezable cgroups among state.cgroups (v1
/// freezer or v2 with cgroup.freeze). Throws sbx::Error when the sandbox has
/// no disk-backed upper dir (e.g. `sbx run` keeps it on a private tmpfs).
SandboxFs sandbox_fs(const std::string& run_root, const runtime::SandboxState& st);

/// The user-namespace maps of sandbox `st` from RUN_ROOT/<id>/config.json
/// (linux.uidMappings/gidMappings) into `uid_map`/`gid_map`; both empty when
/// it uses the host's ids or has no config.json. Throws sbx::Error on a
/// malformed config.json.
void sandbox_id_maps(const std::string& run_root, const runtime::SandboxState& st, std::vector<IdMapping>& uid_map,
                     std::vector<IdMapping>& gid_map);

/// The cgroups among st.cgroups that can be frozen (v1 freezer, or v2 with
/// cgroup.freeze); empty when the sandbox is not running.
std::vector<std::string> freezable_cgroups(const runtime::SandboxState& st);

/// The checkpoint request for a gvisor sandbox started by
/// start_gvisor_detached / restore_gvisor (RUN_ROOT/<id>/{runsc,bundle,meta.json}).
/// Throws sbx::Error when the state dir lacks them.
GvisorCheckpointRequest gvisor_request(const std::string& run_root, const runtime::SandboxState& st);

}  // namespace sbx::snapshot
