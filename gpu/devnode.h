// Host device nodes as a sandbox sees them: read a node's type and real
// (major, minor) with stat(2) and turn it into a runtime-spec linux.devices
// entry plus the matching device-cgroup allow rule.
#pragma once
#include <string>

#include "spec/sandbox_spec.h"

namespace sbx::gpu {

/// stat(2)s `host_path` (a real path on this machine) and returns the node to
/// create at `container_path`: type 'c'/'b', its major/minor, its permission
/// bits, uid/gid 0. Throws sbx::Error when the path is missing ("... does not
/// exist; is the driver loaded?") or is not a character or block device.
DeviceNode stat_device_node(const std::string& host_path, const std::string& container_path);

/// Adds `node` to spec.devices and an allow rule for exactly its (type, major,
/// minor) with `access` ("rwm" by default) to spec.resources.devices. A node
/// already present at the same path is replaced, and a rule already present is
/// not added twice, so applying the same device twice is harmless.
void add_device(SandboxSpec& spec, const DeviceNode& node, const std::string& access = "rwm");

/// Sets KEY=VALUE in spec.process.env, replacing an existing KEY.
void set_env(SandboxSpec& spec, const std::string& key, const std::string& value);

/// Adds a read-only bind mount of `source` (host) at `destination` (sandbox),
/// unless the same destination is already mounted from the same source.
void add_ro_bind(SandboxSpec& spec, const std::string& source, const std::string& destination);

}  // namespace sbx::gpu
