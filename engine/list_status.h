// A listing of sandboxes without their resource usage: for `sbx ps` (table,
// -q), `docker ps` and GET /sbx/v1/sandboxes through `sbx serve`, which show
// ids, names, images, commands and statuses of what may be thousands of
// sandboxes (runtime/inspect_status.h: a few reads each).
#pragma once
#include <vector>

#include "engine/engine.h"
#include "runtime/inspect_status.h"

namespace sbx::engine {

/// Engine::list(req) with each SandboxInfo as runtime::inspect_status reads
/// it: `usage` zero, `oom_kills` of ended sandboxes only. Throws as
/// Engine::list (a bad filter: InvalidArgument).
std::vector<runtime::SandboxInfo> list_status(const Engine& engine, const ListRequest& req);

}  // namespace sbx::engine
