// Where a gVisor sandbox keeps what a checkpoint reads: its runsc state and
// bundle. (A native sandbox's upper dir, freezer and id maps:
// runtime/native/writable_layer.h.)
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"
#include "runtime/state.h"
#include "snapshot/checkpoint.h"

namespace sbx::snapshot {

/// The checkpoint request for a gvisor sandbox started by
/// `sbx create --runtime gvisor` or restore_gvisor (RUN_ROOT/<id>/{runsc,bundle,meta.json}).
/// Throws sbx::Error when the state dir lacks them.
GvisorCheckpointRequest gvisor_request(const std::string& run_root, const runtime::SandboxState& st);

}  // namespace sbx::snapshot
