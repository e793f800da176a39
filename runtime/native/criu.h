// Native memory snapshots would go through CRIU (https://criu.org). sbx does
// not checkpoint native sandboxes yet; this says why, as precisely as the host
// allows (moved from snapshot/checkpoint.cpp: the native backend's refusal of
// Operation::Checkpoint, runtime/backend.h).
#pragma once

namespace sbx::runtime {

/// Throws sbx::Error explaining why native (CRIU) memory snapshots cannot work
/// on this host: CRIU missing, or `criu check` failing (its first error line is
/// quoted; Debian 12's CRIU 3.17 fails on newer kernels' vDSO layout, fixed in
/// CRIU 4.1), always suggesting `--runtime gvisor`. When `criu check` passes it
/// still throws: native checkpointing through CRIU is not implemented yet.
[[noreturn]] void fail_native_checkpoint();

}  // namespace sbx::runtime
