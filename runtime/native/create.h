// `sbx create` of a native sandbox: a detached, long-lived sandbox whose
// init is the holder (runtime/native/holder.h), recorded in RUN_ROOT/<id>
// (runtime/state.h) and driven afterwards by runtime/lifecycle.h.
#pragma once
#include <functional>
#include <string>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// How create_sandbox starts the sandbox.
struct CreateOptions {
  /// A user namespace, as `sbx run` (runtime/linux/userns.h): the range is recorded
  /// in config.json (linux.uidMappings) and the upper dir is owned by the
  /// sandbox's root. Off: --userns host.
  bool userns = false;
  /// spec.stdin_open: the first process's stdin (native: StartOptions::detached_stdin).
  int stdin_fd = -1;
  /// Docker's restart: spec.id names an ended native sandbox, which the new
  /// one replaces on the same writable layer (RUN_ROOT/<id>/fs moves over;
  /// files written before survive) and, when it is free, the same
  /// user-namespace range (else the layer's owners are shifted to the new
  /// one, shift_ids). Throws sbx::Error when that sandbox is missing or still
  /// running. A layer on a --disk tmpfs cannot move: the new one starts empty.
  bool reuse_layer = false;
  /// Runs while the sandbox sets itself up (StartOptions::gc_stale: the gc of
  /// dead sandboxes); empty: nothing.
  std::function<void()> gc_stale;
};

/// Creates and starts a detached sandbox from `spec` (spec.id is filled when
/// empty; an empty spec.process.args means "hold only": the sandbox runs just
/// its init). Returns the id once the first process has exec'd. The state dir
/// is RUN_ROOT/<id>; the spec is kept as its config.json. Throws sbx::Error
/// (125, or 126/127 when the command cannot be executed / is not found) and
/// leaves nothing behind on a throw.
/// spec.disk_bytes (--disk) puts the upper dir on a tmpfs of that size mounted
/// at RUN_ROOT/<id>/fs (removed with the state dir by rm and gc).
std::string create_sandbox(SandboxSpec spec, const std::string& run_root, const CreateOptions& opts = {});

}  // namespace sbx::runtime
