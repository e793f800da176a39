// A sandbox's status without its resource usage: what a listing of many
// sandboxes (`sbx ps`, `docker ps`, GET /sbx/v1/sandboxes) needs, at a few
// reads each (state.json, the end record, its init's /proc stat) instead of
// inspect_dir's cgroup and per-process usage files.
#pragma once
#include <string>

#include "runtime/state.h"

namespace sbx::runtime {

/// inspect_dir (runtime/state.h) of DIR without `usage` (left zero) and
/// without the OOM kill count of a sandbox that has not ended (0; an ended
/// one's count and "oom" reason are read as inspect_dir reads them).
/// Throws as inspect_dir.
SandboxInfo inspect_status(const std::string& dir);

}  // namespace sbx::runtime
