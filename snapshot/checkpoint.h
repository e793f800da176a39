// Memory snapshots in the catalog: a running sandbox's processes (memory,
// threads, file descriptors, kernel state) plus its in-memory filesystem are
// saved by its backend (runtime/backend.h Backend::checkpoint: gVisor's runsc
// today, runtime/gvisor/gvisor_checkpoint.h; native sandboxes through CRIU
// once runtime/native/ drives it), and any number of new sandboxes continue
// from that exact point (Backend::restore of the backend that took it).
// What this file adds is the catalog's part: the snapshot's name, where its
// content lives, its record, and replacing an older snapshot of that name.
//
// Layout: ROOT/snapshots/checkpoints/<content id>/, the backend's own files.
#pragma once
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "snapshot/catalog.h"

namespace sbx::snapshot {

using runtime::RestoredSandbox;

/// Takes a memory snapshot of the running sandbox `sb` through `backend`
/// (the sandbox's own; the caller ran its check_checkpoint) into the catalog
/// of store `root`, and returns the record (kind "memory", runtime: the
/// backend's name, source: the image it ran). `name` empty: "ckpt-<id12>-<random>";
/// a name in use is replaced once the new snapshot is complete.
/// `leave_running`: the sandbox goes on from the checkpoint (else it stops).
/// Throws sbx::Error: an invalid name, the backend's error (nothing is
/// recorded then), or — the snapshot recorded — a sandbox that could not go
/// on with leave_running (it is stopped; the error says how to restore it).
SnapshotRecord checkpoint_sandbox(const std::string& root, runtime::Backend& backend, const runtime::SandboxRef& sb,
                                  const std::string& name, bool leave_running);

/// Starts `count` (1..4096) independent sandboxes from the memory snapshot
/// `snapshot` through `backend` (the one that took it: the record's runtime,
/// find_record), named `name` (count > 1: NAME-1 … NAME-N; empty: none), and
/// updates its last use. Throws sbx::Error: no such snapshot, or the
/// backend's error (then no copy is left running).
std::vector<RestoredSandbox> restore_sandboxes(const std::string& root, runtime::Backend& backend,
                                               const std::string& snapshot, const std::string& name, int count);

}  // namespace sbx::snapshot
