// config.json hooks (runtime-spec config.md "POSIX-platform Hooks"): each
// hook is a program run with its args and env, the container's state JSON on
// stdin, within its timeout. Which process runs them (and so in which
// namespaces their path resolves) is the caller's: prestart/createRuntime/
// poststart/poststop from sbx-runc in the runtime's namespaces,
// createContainer from the container's init before pivot_root (its mount
// namespace, host paths still visible), startContainer from the init after
// pivot_root (the container's file system).
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::ocirt {

/// Runs `hooks` in order; `stage` ("createRuntime", …) names them in errors.
/// Throws sbx::Error "hooks.STAGE[i] PATH: exited with status N" (or killed
/// by a signal, or timed out after T s: then it is killed) on the first that
/// fails. Safe in a single-threaded child (fork + execve).
void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& stage, const std::string& state_json);

}  // namespace sbx::ocirt
