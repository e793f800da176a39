// Named volumes: directories in sbx's store that outlive the sandboxes using
// them (docker's "local" volume driver). A volume NAME is
//
//   ROOT/volumes/NAME/_data         the data, bind-mounted into sandboxes
//   ROOT/volumes/NAME/volume.json   its record (name, driver, labels, created)
//   ROOT/volumes/NAME/refs/<id>     one per sandbox that mounts it: the run
//                                   root, the creating pid, the destination
//
// A volume is made under ROOT/volumes/.tmp-* and renamed into place, so that
// no half-made volume is ever listed. `_data` is owned by kVolumeIdBase
// (runtime/linux/userns.h): every sandbox, whatever its own id range or
// backend, sees on-disk id kVolumeIdBase+N as its id N, so sandboxes sharing a
// volume agree on owners and host root's ids never appear in it. ROOT/volumes
// is 0700: no host user reaches a set-id file a sandbox left there.
// (The model: moby's volume/local, docker's `docker volume`.)
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// One named volume as front ends show it.
struct Volume {
  std::string name;
  std::string driver = "local";
  std::map<std::string, std::string> labels;
  std::string created;     ///< RFC 3339, UTC
  std::string mountpoint;  ///< ROOT/volumes/NAME/_data
  /// Docker's local-driver options it was created with (type, o, device);
  /// empty: a directory in the store.
  std::map<std::string, std::string> options;
  /// Sandboxes (full ids) that mount it, running or not (filled by
  /// list_volumes / inspect_volume).
  std::vector<std::string> used_by;
  /// Docker's volume object (GET /volumes/{name}): Name, Driver, Mountpoint,
  /// CreatedAt, Labels, Scope, Options, UsageData (-1: not computed).
  std::string json() const;
};

/// `sbx volume create`, POST /volumes/create.
struct VolumeCreateRequest {
  std::string name;  ///< empty: 64 random hex characters (as docker)
  std::map<std::string, std::string> labels;
  std::string driver = "local";  ///< the only one
  /// Docker's local-driver options (`--opt`, DriverOpts): type=tmpfs with
  /// o=size=N[kmg],mode=… (a tmpfs of that size mounted for each sandbox that
  /// uses it), or type=none,o=bind,device=/HOST/DIR (a bind of that dir).
  /// Anything else: sbx::Error (Unsupported / InvalidArgument).
  std::map<std::string, std::string> options;
};

/// What prune_volumes removed.
struct VolumePruneResult {
  std::vector<std::string> deleted;  ///< names
  uint64_t reclaimed = 0;            ///< bytes of their files
};

/// Docker's volume name rule: [a-zA-Z0-9][a-zA-Z0-9_.-]+ (two characters at
/// least). True when `name` follows it.
bool valid_volume_name(const std::string& name);

/// Throws sbx::Error (InvalidArgument) naming `what` when `name` breaks the rule.
void check_volume_name(const std::string& name, const std::string& what = "volume name");

/// A -v / Binds source that names a volume rather than a host path: docker's
/// rule (neither absolute nor relative: no leading '/' or '.').
bool is_volume_source(const std::string& source);

/// A named volume in a spec, before the engine resolves it (build_sandbox
/// makes it; Engine::run/create turn it into a bind of the volume's _data):
/// type "volume", source the volume's name, options "ro" or none, and
/// "nocopy" (no copy of the image's files into an empty volume).
inline constexpr const char* kVolumeMountType = "volume";

/// A volume mount with an empty source is an anonymous volume (--mount
/// type=volume,target=/p without a source, as docker's): the engine makes
/// one, labelled as an image VOLUME's, when it attaches it.
///
/// -v NAME:/PATH[:OPTS] (OPTS: ro, rw, nocopy) → a volume mount. `what`
/// names the option in errors. Throws sbx::Error (InvalidArgument).
spec::Mount parse_volume_mount(const std::string& text, const std::string& what = "--volume");

/// --mount type=bind|volume|tmpfs,src=…,dst=…[,readonly][,volume-nocopy]
/// [,tmpfs-size=…][,tmpfs-mode=…] (docker's --mount; source=/target=/
/// destination= and ro= are accepted) → a bind (host path made real), volume
/// (no source: an anonymous one) or tmpfs mount. Throws sbx::Error (InvalidArgument).
spec::Mount parse_mount_flag(const std::string& text, const std::string& what = "--mount");

/// ROOT/volumes.
std::string volumes_dir(const std::string& root);

/// The name of the volume whose _data is `source` under `root`, or "".
std::string volume_of_source(const std::string& root, const std::string& source);

}  // namespace sbx::engine
