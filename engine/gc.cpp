// Engine: gc — everything nothing refers to any more: what killed sandboxes
// left behind (state dirs, empty sbx-* cgroups, id ranges, snapshot copies)
// first, then image blobs and layers no image or live sandbox uses; with
// older_than_s, also snapshots not used for that long.
#include "engine/engine.h"
#include "engine/volume_gc.h"

#include "common/log.h"
#include "runtime/backends.h"
#include "runtime/snapshot_copies.h"

namespace sbx::engine {

GcResult Engine::gc(int64_t older_than_s) {
  GcResult out;
  for (auto& p : runtime::gc_sandboxes(cfg_.run_root)) out.removed.push_back(std::move(p));
  for (auto& p : runtime::gc_snapshot_copies(cfg_.run_root)) out.removed.push_back(std::move(p));
  for (auto& p : gc_volumes(cfg_.root)) out.removed.push_back(std::move(p));
  if (older_than_s >= 0) out.snapshots = snapshot::gc(cfg_.root, cfg_.run_root, older_than_s);
  out.store = oci::Store(cfg_.root).gc(cfg_.run_root);
  for (const auto& p : out.removed) log::debug("gc: removed " + p);
  for (const auto& r : out.snapshots) log::debug("gc: removed snapshot " + r.name);
  return out;
}

}  // namespace sbx::engine
