// The end of a sandbox that sbx serve created, shared by its APIs (Docker's
// containers, /sbx/v1's sandboxes, E2B's sandboxes): one watcher thread for
// all of them (epoll over their inits' pidfds) notices each end, and the API's
// callback then waits for and reaps what the server holds of it (on native
// its init, on gVisor its monitor: children of the server since create), so
// that no zombie is left behind. A live sandbox costs the server one
// descriptor, no thread.
#pragma once
#include <functional>
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

/// Calls `on_end` once the init of `created` (its state as create left it:
/// the holder on native, the monitor on gVisor) has ended, on a thread of its
/// own that lives as long as the callback (so a slow one holds up no other);
/// at once when that process is gone already. Until then the sandbox is
/// watched by the server's one watcher thread (started on first use), which
/// holds a pidfd (pidfd_open(2)) per watched sandbox. No throw: when the
/// watcher cannot be set up, falls back to a thread that waits for this one.
void on_sandbox_end(const runtime::SandboxState& created, std::function<void()> on_end);

/// Sandboxes whose end the watcher waits for now (for tests and logs).
size_t watched_sandboxes();

}  // namespace sbx::server
