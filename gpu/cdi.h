// Container Device Interface (CDI): read the vendors' device specs and apply a
// device's containerEdits to a SandboxSpec, as podman and containerd do for
// `--device vendor.com/class=name`.
//
// Follows https://github.com/cncf-tags/container-device-interface SPEC.md,
// cdiVersion 0.3.0 to 0.8.0: spec files *.json / *.yaml / *.yml directly in
// /etc/cdi and /var/run/cdi (later directories have higher priority: a device
// defined in both is taken from /var/run/cdi, as the reference registry
// does); a spec has "kind" ("vendor/class"), spec-level "containerEdits" and
// "devices" [{name, containerEdits}]; containerEdits are env, deviceNodes,
// mounts, hooks and additionalGids. Spec-level edits are applied once, before
// the first requested device of that spec.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/host_root.h"
#include "spec/sandbox_spec.h"

namespace sbx::gpu {

struct CdiDeviceNode {
  std::string path;       ///< in the sandbox
  std::string host_path;  ///< defaults to path
  std::string type;       ///< "c", "b", "p" or "" (taken from the host node)
  std::optional<int64_t> major, minor;
  std::optional<uint32_t> file_mode;
  std::string permissions;  ///< cgroup access, "rwm" when empty
  std::optional<uint32_t> uid, gid;
};

struct CdiMount {
  std::string host_path, container_path, type;
  std::vector<std::string> options;
};

struct CdiHook {
  std::string hook_name;  ///< "createContainer", ...
  std::string path;
  std::vector<std::string> args, env;
  std::optional<int> timeout_s;
};

struct CdiEdits {
  std::vector<std::string> env;
  std::vector<CdiDeviceNode> device_nodes;
  std::vector<CdiMount> mounts;
  std::vector<CdiHook> hooks;
  std::vector<uint32_t> additional_gids;
};

struct CdiDevice {
  std::string name;
  CdiEdits edits;
};

struct CdiSpec {
  std::string file;     ///< where it was read from (for messages)
  std::string version;  ///< cdiVersion
  std::string kind;     ///< "vendor/class"
  CdiEdits edits;       ///< spec-level containerEdits
  std::vector<CdiDevice> devices;
};

/// Parses one spec file's text; YAML when `file` ends in .yaml/.yml, else JSON.
/// Throws sbx::Error naming the file and the field for syntax errors,
/// unsupported cdiVersion, a malformed kind or device name, duplicate device
/// names, fields of the wrong type and edits sbx cannot honour (intelRdt,
/// netDevices, hooks other than createContainer).
CdiSpec parse_cdi_spec(std::string_view text, const std::string& file);

/// Splits "vendor/class=name" into ("vendor/class", "name"). Throws sbx::Error
/// when it is not a valid CDI qualified device name.
std::pair<std::string, std::string> parse_qualified_name(const std::string& qualified);

/// True when `arg` looks like a CDI device name rather than a host path.
bool is_cdi_name(const std::string& arg);

/// The specs found in a set of directories.
class CdiRegistry {
 public:
  static const std::vector<std::string>& default_dirs();  ///< /etc/cdi, /var/run/cdi

  /// Reads every spec file in `dirs` (relative to `root`; missing directories
  /// are fine). A file that fails to parse does not stop the others: its
  /// error is kept in errors() and reported when a device can't be found.
  static CdiRegistry load(const HostRoot& root, const std::vector<std::string>& dirs = default_dirs());

  const std::vector<CdiSpec>& specs() const { return specs_; }
  const std::vector<std::string>& errors() const { return errors_; }

  /// Every device as "vendor/class=name", sorted.
  std::vector<std::string> device_names() const;

  /// Applies the named devices ("vendor/class=name"; "vendor/class=all" means
  /// every device of that kind unless a spec defines a device named "all")
  /// to `spec`: env (replacing the same key), device nodes (type/major/minor
  /// and mode filled from the host node when absent) with a cgroup allow rule
  /// each, mounts (type "bind" when absent), createContainer hooks,
  /// additional gids. Host paths are joined to `root`. Throws sbx::Error for an
  /// unknown kind or device (listing what exists and any unreadable specs), a
  /// device defined twice at the same priority, or a missing host node.
  void apply(const std::vector<std::string>& qualified_names, const HostRoot& root, SandboxSpec& spec) const;

 private:
  struct Entry {
    const CdiSpec* spec;
    const CdiDevice* device;
    size_t priority;
  };
  std::vector<CdiSpec> specs_;
  std::vector<size_t> priority_;  // per spec: index of its directory
  std::vector<std::string> errors_;
};

/// docker's plain host device, `--device /dev/host[:/dev/in-sandbox][:rwm]`:
/// creates the node (the host's type, major, minor, mode) and allows it with
/// the given access in the device cgroup. Throws sbx::Error when the path is
/// not a device node or the access string is not a subset of "rwm".
void apply_host_device(const std::string& arg, const HostRoot& root, SandboxSpec& spec);

}  // namespace sbx::gpu
