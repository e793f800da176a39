// Creating a sandbox from the multithreaded server. The engine starts a
// sandbox's init with a raw clone3(2), whose child goes on running sbx's code
// without glibc's fork handlers: from a process with other threads it can
// inherit a malloc arena lock one of them held at that instant, or glibc's
// set*id thread broadcast, and wait on it forever (seen at 4 concurrent
// starts through the Docker API and at 8 through /sbx/v1). glibc's fork()
// resets those locks and leaves one thread, so every create of the server
// runs in a forked child, as `sbx create` runs in its own process; the
// sandbox's holder outlives that child either way.
#pragma once
#include <string>

#include "engine/engine.h"

namespace sbx::server {

/// engine.create(req) in a forked, single-threaded child of this process;
/// returns the new sandbox's id. The child's sbx::Error comes back through a
/// pipe and is rethrown here with its message and exit code. Throws
/// sbx::Error also when the fork fails or the child dies without an answer.
std::string create_in_child(engine::Engine& eng, const engine::SandboxRequest& req);

}  // namespace sbx::server
