// The end of a sandbox that sbx serve created, shared by its APIs (Docker's
// containers, /sbx/v1's sandboxes, E2B's sandboxes): each starts a watcher
// thread per sandbox that waits for its end and reaps what the server holds
// of it (on native its init, on gVisor its monitor: children of the server
// since create), so that no zombie is left behind.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "engine/engine.h"

namespace sbx::server {

/// Waits (no time-out) until sandbox `id` ends, then reaps `created` (its
/// state as create left it; an empty id: nothing of it is the server's
/// child). Returns how it ended; nullopt when the wait failed (logged at
/// debug level, `api` naming the caller, "sbx/v1"). No throw.
std::optional<runtime::EndRecord> wait_and_reap(engine::Engine& engine, const std::string& id,
                                                const runtime::SandboxState& created, std::string_view api);

}  // namespace sbx::server
