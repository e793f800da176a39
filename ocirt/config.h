// A bundle's config.json as an OCI runtime (sbx-runc) must honour it.
//
// Spec: https://github.com/opencontainers/runtime-spec/blob/v1.0.2/config.md
// and config-linux.md. Unlike oci/runtime_config.h (which maps config.json
// onto sbx's own SandboxSpec for the gVisor bundle writer), this keeps every
// field a caller such as podman or containerd may set, in config.json's own
// terms: the mounts as given (no defaults added), namespaces joined by path,
// the seccomp profile, every capability set, all hook stages. A field sbx-runc
// cannot honour is refused by parse_config with a message naming it, so that
// `create` fails rather than run a container weaker than asked for.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::ocirt {

/// linux.namespaces entry: type as the spec spells it ("pid", "network",
/// "mount", "ipc", "uts", "user", "cgroup"); path empty: a new one.
struct Namespace {
  std::string type;
  std::string path;
};

/// process.capabilities: the five sets, "CAP_*" names.
struct Capabilities {
  std::vector<std::string> bounding, effective, permitted, inheritable, ambient;
};

/// linux.seccomp.syscalls[].args entry.
struct SeccompArg {
  unsigned index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  ///< "SCMP_CMP_EQ", ...
};

/// linux.seccomp.syscalls entry.
struct SeccompRule {
  std::vector<std::string> names;
  std::string action;  ///< "SCMP_ACT_ALLOW", ...
  std::optional<unsigned> errno_ret;
  std::vector<SeccompArg> args;
};

/// linux.seccomp.
struct Seccomp {
  std::string default_action;
  std::optional<unsigned> default_errno_ret;
  std::vector<std::string> architectures;  ///< "SCMP_ARCH_X86_64", ...
  std::vector<std::string> flags;          ///< "SECCOMP_FILTER_FLAG_LOG", ...
  std::vector<SeccompRule> syscalls;
};

/// config.json "process" (also an exec's --process file).
struct Process {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd = "/";
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> additional_gids;
  std::optional<uint32_t> umask;
  bool terminal = false;
  Capabilities capabilities;
  std::vector<spec::Rlimit> rlimits;
  bool no_new_privileges = false;
  std::optional<int> oom_score_adj;
};

/// linux.resources, the parts sbx-runc writes to cgroups.
struct Resources {
  std::optional<int64_t> memory_limit;        ///< bytes (memory.limit_in_bytes / memory.max)
  std::optional<int64_t> memory_reservation;  ///< bytes (soft limit / memory.low)
  std::optional<int64_t> memory_swap;         ///< bytes, memory + swap (memsw / memory.swap.max + limit)
  std::optional<uint64_t> cpu_shares;         ///< cpu.shares (v2: converted to cpu.weight)
  std::optional<int64_t> cpu_quota;           ///< µs per period; -1: none
  std::optional<uint64_t> cpu_period;         ///< µs
  std::string cpuset_cpus, cpuset_mems;
  std::optional<int64_t> pids_limit;          ///< <= 0: no limit
  std::vector<spec::DeviceRule> devices;
};

/// hooks, by stage.
struct Hooks {
  std::vector<spec::Hook> prestart, create_runtime, create_container, start_container, poststart, poststop;
};

/// The whole config.json, as sbx-runc uses it.
struct Config {
  std::string oci_version;
  Process process;
  std::string root_path;  ///< absolute (resolved against the bundle)
  bool root_readonly = false;
  std::string hostname, domainname;
  std::vector<spec::Mount> mounts;
  std::vector<Namespace> namespaces;
  std::vector<spec::IdMapping> uid_mappings, gid_mappings;
  std::vector<spec::DeviceNode> devices;
  Resources resources;
  std::string cgroups_path;
  std::map<std::string, std::string> sysctl;
  std::optional<Seccomp> seccomp;
  std::vector<std::string> masked_paths, readonly_paths;
  std::string rootfs_propagation;
  Hooks hooks;
  std::map<std::string, std::string> annotations;

  /// The entry of linux.namespaces of `type`, or nullptr when it is not listed.
  const Namespace* find_namespace(const std::string& type) const;
};

/// Parses config.json text; `bundle` (an absolute directory) resolves a
/// relative root.path. Throws sbx::Error naming the field ("config.json:
/// linux.intelRdt: not supported by sbx-runc") for malformed input or a field
/// sbx-runc cannot honour.
Config parse_config(std::string_view json_text, const std::string& bundle);

/// Parses one "process" object (config.json's, or an exec --process file).
/// `where` names it in errors. Throws sbx::Error.
Process parse_process(std::string_view json_text, const std::string& where);

/// Parses a linux.resources object (update --resources). Throws sbx::Error.
Resources parse_resources(std::string_view json_text);

}  // namespace sbx::ocirt
