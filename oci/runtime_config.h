// OCI runtime-spec config.json: the one reader (parse_runtime_config, in
// config.json's own terms: every field a caller such as podman or containerd
// may set) and SandboxSpec <-> config.json for sbx's own bundles.
// Spec: https://github.com/opencontainers/runtime-spec/blob/v1.1.0/config.md and
// config-linux.md. The gVisor backend writes a bundle's config.json with
// to_runtime_config and reads it back with from_runtime_config (both keep every
// field SandboxSpec has); sbx-runc (ocirt/config.h) reads the caller's with
// parse_runtime_config and decides what it can honour.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/cgroup_limits.h"
#include "spec/sandbox_spec.h"
#include "spec/seccomp_profile.h"

namespace sbx::oci {

/// linux.namespaces entry: type as the spec spells it ("pid", "network",
/// "mount", "ipc", "uts", "user", "cgroup", …); path empty: a new one.
struct RuntimeNamespace {
  std::string type;
  std::string path;
};

/// process.capabilities: the five sets, as written ("CAP_*").
struct RuntimeCapabilities {
  std::vector<std::string> bounding, effective, permitted, inheritable, ambient;
};

/// config.json "process" (also an exec --process file).
struct RuntimeProcess {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd = "/";
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> additional_gids;
  std::string username;
  std::optional<uint32_t> umask;
  bool terminal = false;
  bool has_capabilities = false;  ///< process.capabilities was given
  RuntimeCapabilities capabilities;
  std::vector<spec::Rlimit> rlimits;
  bool no_new_privileges = false;
  std::optional<int> oom_score_adj;
};

/// hooks, by stage.
struct RuntimeHooks {
  std::vector<spec::Hook> prestart, create_runtime, create_container, start_container, poststart, poststop;
};

/// The whole config.json.
struct RuntimeConfig {
  std::string oci_version;
  bool has_process = false;  ///< "process" was given
  RuntimeProcess process;
  bool has_root = false;     ///< "root" was given
  std::string root_path;     ///< resolved against the bundle when relative (and a bundle was given)
  bool root_readonly = false;
  std::string hostname, domainname;
  std::vector<spec::Mount> mounts;  ///< as written: type "" when left out
  RuntimeHooks hooks;
  std::map<std::string, std::string> annotations;
  bool has_linux = false;    ///< "linux" was given
  std::vector<RuntimeNamespace> namespaces;
  std::vector<spec::IdMapping> uid_mappings, gid_mappings;
  std::vector<spec::DeviceNode> devices;  ///< type as written ('c', 'b', 'u', 'p', …)
  spec::CgroupLimits resources;
  std::string cgroups_path;
  std::map<std::string, std::string> sysctl;
  std::optional<spec::SeccompProfile> seccomp;
  std::vector<std::string> masked_paths, readonly_paths;
  std::string rootfs_propagation;
  std::string mount_label;
  /// Properties the spec defines whose meaning this reader does not keep,
  /// given with a non-empty value ("linux.intelRdt", "process.apparmorProfile",
  /// "linux.resources.blockIO", …): a runtime that cannot honour them refuses
  /// them by name. Unknown properties are ignored, as config.md requires.
  std::vector<std::string> unsupported;

  /// The entry of linux.namespaces of `type`, or nullptr when it is not listed.
  const RuntimeNamespace* find_namespace(const std::string& type) const;
};

/// Parses config.json text; `bundle` (an absolute directory, or "") resolves
/// a relative root.path. Every integer is range-checked into its field.
/// Throws sbx::Error naming the field ("config.json: process.user.uid:
/// number 4294967296 is out of range") on malformed input; unknown
/// properties are ignored.
RuntimeConfig parse_runtime_config(std::string_view json_text, const std::string& bundle);

/// Parses one "process" object (config.json's, or an exec --process file);
/// `where` names it in errors. Throws sbx::Error.
RuntimeProcess parse_runtime_process(std::string_view json_text, const std::string& where);

/// Parses a linux.resources object (runc update --resources). Throws sbx::Error.
spec::CgroupLimits parse_runtime_resources(std::string_view json_text);

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

/// Reads a config.json document (parse_runtime_config) into a SandboxSpec
/// (process, hostname, root readonly, mounts other than the defaults,
/// devices, resources, id maps, createContainer hooks, annotations). Throws
/// sbx::Error naming the field on malformed input.
SandboxSpec from_runtime_config(std::string_view json_text);

/// Default rlimit/capability names use the "RLIMIT_*"/"CAP_*" spelling of the spec.
}  // namespace sbx::oci
