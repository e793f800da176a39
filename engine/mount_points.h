// The bind and volume mounts of a sandbox as Docker's MountPoint objects
// (container inspect and list `Mounts`; `sbx ps --json`, `sbx inspect`).
// A named volume appears in a spec either as a "volume" mount (before the
// engine resolves it: a Docker container created but not started) or as a
// bind of ROOT/volumes/NAME/_data (after); both are shown as Type "volume".
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// One mount as Docker's MountPoint describes it.
struct MountPoint {
  std::string type;         ///< "bind" or "volume"
  std::string name;         ///< the volume's name ("" for a bind)
  std::string source;       ///< host path (a volume's _data)
  std::string destination;  ///< inside the sandbox
  bool read_only = false;
};

/// The bind and volume mounts among `mounts` (a spec's extra mounts; tmpfs
/// and others are left out), volumes recognised by their _data under `root`.
std::vector<MountPoint> mount_points(const std::string& root, const std::vector<spec::Mount>& mounts);

/// The bind and volume mounts of the sandbox whose state dir is `sandbox_dir`
/// (read from its config.json); empty when that file is gone or unreadable.
std::vector<MountPoint> sandbox_mount_points(const std::string& root, const std::string& sandbox_dir);

/// Docker's MountPoint array (Engine API v1.41+: Type, Name, Source,
/// Destination, Driver, Mode, RW, Propagation).
nlohmann::json mount_points_json(const std::vector<MountPoint>& points);

}  // namespace sbx::engine
