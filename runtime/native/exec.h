// `sbx exec`: runs one more process inside a running (created) sandbox.
//
// The process joins the sandbox's cgroups, then all its namespaces at once with
// setns(pidfd, CLONE_NEW*) (user first when there is one; the kernel orders
// them), is forked again so that it is inside the sandbox's pid namespace (as
// a direct child of sbx, via CLONE_PARENT), and then gets exactly the first
// process's treatment: rlimits, bounding set, setgroups/setgid/setuid,
// capabilities, working directory, no_new_privs, seccomp last (the same
// functions as runtime/native_backend, in the same order). If sbx dies, the
// process is re-parented to the sandbox's init, which reaps it.
#pragma once
#include <string>

#include "runtime/exec_request.h"
#include "spec/sandbox_spec.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Runs `req` in the sandbox whose state dir is `dir` (its state `st` and spec
/// `spec`, from config.json), waits for it, forwarding signals, and returns
/// its exit status as `sbx run` does: the code, 128+N for signal N, 124 on
/// timeout, 126/127 when the command cannot be executed / is not found.
/// Touches DIR/activity at start, while it runs, and at the end (idle timeout).
/// Throws sbx::Error (125) when the sandbox is not running or joining fails.
/// From a process that uses fresh helpers (sbx serve; runtime/linux/self_exec.h)
/// the joining is done by a fresh exec of sbx, never by a fork of the caller.
int exec_in_sandbox(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req);

/// The fresh helper of exec_in_sandbox (runtime/native/fresh_helper.h runs
/// it): reads its request from `payload_fd`, joins the sandbox and starts the
/// process as exec_in_sandbox's child. Returns only on a malformed request
/// (exit status 125); else it ends with _exit.
int exec_helper_main(int payload_fd);

}  // namespace sbx::runtime
