// OCI runtime-spec config.json <-> SandboxSpec.
// Spec: https://github.com/opencontainers/runtime-spec/blob/v1.0.2/config.md and
// config-linux.md. The gVisor backend writes a bundle's config.json with
// to_runtime_config; the future runc-compatible mode reads one with
// from_runtime_config. Both directions keep every field SandboxSpec has.
#pragma once
#include <string>
#include <string_view>

#include "spec/sandbox_spec.h"

namespace sbx::oci {

/// What the writer needs beyond the spec: where the rootfs lives (bundle-relative
/// or absolute) and the cgroup path to ask the runtime for (empty: none).
struct RuntimeConfigOptions {
  std::string rootfs_path = "rootfs";
  std::string cgroups_path;
  bool with_default_mounts = true;  ///< /proc, /dev, /dev/pts, /dev/shm, /dev/mqueue, /sys
  /// linux.namespaces' network entry gets this path (a namespace the caller
  /// made: gVisor's --network private); empty: a new one (or none with host).
  std::string network_namespace_path;
};

/// Renders `spec` as a runtime-spec 1.0.2 config.json document (pretty JSON text).
/// sbx-only fields (image, labels, timeout, runtime) go to annotations
/// "org.sbx.*". Throws sbx::Error only on an impossible spec (e.g. empty args).
std::string to_runtime_config(const SandboxSpec& spec, const RuntimeConfigOptions& opts = {});

/// Parses a config.json document into a SandboxSpec (process, hostname, root
/// readonly, mounts other than the defaults, devices, resources, id maps,
/// hooks, annotations). Throws sbx::Error naming the field on malformed input.
SandboxSpec from_runtime_config(std::string_view json_text);

/// Default rlimit/capability names use the "RLIMIT_*"/"CAP_*" spelling of the spec.
}  // namespace sbx::oci
