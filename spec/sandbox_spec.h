// SandboxSpec: everything needed to start one sandbox, as a plain struct.
//
// It is kept a faithful image of the OCI runtime-spec config.json
// (https://github.com/opencontainers/runtime-spec/blob/main/config.md): the
// gVisor backend writes a config.json from it (oci/runtime_config), and the
// future OCI-runtime mode reads one into it. Fields that config.json has use
// its names and units; sbx-only fields (image, timeout, runtime) are marked.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sbx::spec {

/// config.json "mounts" entry. Options as mount(8): "ro", "nosuid", "bind",
/// "rbind", "size=64m", "mode=1777", ...
struct Mount {
  std::string destination;  ///< absolute path inside the sandbox
  std::string type;         ///< "bind", "tmpfs", "proc", ...
  std::string source;       ///< host path for binds, fs name otherwise
  std::vector<std::string> options;
};

/// config.json process.rlimits entry ("RLIMIT_NOFILE", soft, hard).
struct Rlimit {
  std::string type;
  uint64_t soft = 0;
  uint64_t hard = 0;
};

/// config.json linux.devices entry: a device node created in the sandbox's /dev.
struct DeviceNode {
  std::string path;  ///< e.g. "/dev/nvidia0"
  char type = 'c';   ///< 'c' or 'b'
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t file_mode = 0666;
  uint32_t uid = 0;
  uint32_t gid = 0;
  /// (Last, so that brace initialisers of the fields above stay valid.)
  /// Where the node is on the host, when not at `path` (a CDI hostPath, a
  /// GPU host root): what a user-namespaced sandbox bind-mounts, since it
  /// cannot mknod. Empty: `path`.
  std::string host_path;
};

/// config.json linux.resources.devices entry (device cgroup rule).
struct DeviceRule {
  bool allow = false;
  char type = 'a';     ///< 'a' (all), 'c' or 'b'
  int64_t major = -1;  ///< -1 means any ("*")
  int64_t minor = -1;
  std::string access = "rwm";
};

/// config.json linux.uidMappings / gidMappings entry.
struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

/// config.json hooks entry (CDI specs can carry createContainer hooks).
struct Hook {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout_s;
};

/// config.json "process".
struct Process {
  std::vector<std::string> args;
  std::vector<std::string> env;  ///< "KEY=VALUE"
  std::string cwd = "/";
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> additional_gids;
  std::string user;  ///< sbx: the -u / image User text it was resolved from
  bool terminal = false;
  std::vector<Rlimit> rlimits;
  bool no_new_privileges = true;
  std::vector<std::string> capabilities;  ///< "CAP_CHOWN", ... (bounding = effective = permitted)
};

/// config.json linux.resources (the parts sbx sets).
struct Resources {
  std::optional<int64_t> memory_bytes;  ///< memory.limit_in_bytes / memory.max
  std::optional<double> cpus;           ///< CPU count, as --cpus (quota/period)
  std::optional<int64_t> pids_limit;    ///< pids.max
  std::vector<DeviceRule> devices;      ///< after the default allow list
};

/// none: own namespace, loopback only; host: the host's namespace; private
/// (podman's "bridge"): own namespace with a veth to the host, an address
/// from sbx's pool, NAT out, egress rules (runtime/linux/sandbox_network.h);
/// user: own namespace joined to the user-defined networks of
/// NetworkOptions::networks (`sbx network create`; runtime/linux/user_network.h).
enum class NetworkMode { None, Host, Private, User };

/// sbx: -p/--publish [HOST_IP:]HOST_PORT:CTR_PORT[/tcp|udp] (docker/podman).
struct PortMapping {
  std::string host_ip;  ///< empty: every address of the host
  uint16_t host_port = 0;
  uint16_t container_port = 0;
  std::string protocol = "tcp";  ///< "tcp" or "udp"
};

/// sbx: one user-defined network a sandbox joins (--network NAME, `sbx
/// network connect`; Docker's EndpointsConfig entry).
struct NetworkAttachment {
  std::string network;               ///< its name, id or unique id prefix
  std::vector<std::string> aliases;  ///< --network-alias: more names for the sandbox on that network's DNS
  std::string ip;                    ///< --ip: a fixed IPv4 address in its subnet; empty: the next free one
};

/// sbx: what --network private adds (config.json has no place for it).
struct NetworkOptions {
  /// --allow-egress: CIDRs or IPs, DOMAIN, *.DOMAIN. Any entry: all else refused.
  std::vector<std::string> allow_egress;
  std::vector<std::string> deny_egress;  ///< --deny-egress CIDRs or IPs (win over allows)
  std::vector<PortMapping> publish;      ///< -p
  std::vector<std::string> dns;          ///< --dns servers (IPv4)
  std::vector<std::pair<std::string, std::string>> extra_hosts;  ///< --add-host NAME:IP
  /// NetworkMode::User: the networks, in order (eth0, eth1, …; the first
  /// that is not internal gives the default route).
  std::vector<NetworkAttachment> networks;
};

/// One sandbox, as the CLI (or a future front end) asks for it.
struct SandboxSpec {
  std::string id;    ///< 64 hex chars
  std::string name;  ///< optional, unique among live sandboxes

  // sbx: the image it runs. layer_dirs are the unpacked layers, bottom first.
  std::string image_ref;
  std::string image_id;
  std::vector<std::string> layer_dirs;
  /// sbx: directory holding the overlay's "upper" and "work" dirs (disk-backed,
  /// for create/snapshot). Empty: a private tmpfs inside the sandbox's mount
  /// namespace, gone with the sandbox.
  std::string upper_dir;
  /// sbx: --disk, the most bytes the writable layer (the overlay upper dir)
  /// may hold; writes beyond it fail with ENOSPC. 0: no limit of its own.
  /// Native: the size= of the tmpfs holding the upper dir (so the bytes are
  /// memory, charged to the memory cgroup of the process that writes them).
  uint64_t disk_bytes = 0;

  Process process;
  std::string hostname;
  bool readonly_rootfs = false;  ///< config.json root.readonly
  std::vector<Mount> mounts;     ///< volumes, tmpfs and extra mounts, in order
  std::vector<DeviceNode> devices;
  Resources resources;
  NetworkMode network = NetworkMode::None;
  std::vector<Hook> create_container_hooks;
  /// sbx: directories of bind-mounted shared libraries (GPU driver files, see
  /// gpu/nvidia.h). When not empty, the runtime runs the image's ldconfig
  /// inside the sandbox as `ldconfig DIR...` after all mounts are in place and
  /// before the root is made read-only and the process starts (as the NVIDIA
  /// Container Toolkit's update-ldcache hook does): it adds them to the
  /// sandbox's /etc/ld.so.cache and creates the soname links (libcuda.so.1 ->
  /// libcuda.so.<version>). The first of /sbin/ldconfig, /usr/sbin/ldconfig
  /// that exists in the rootfs is used; with none (musl, distroless) the step
  /// is skipped with a debug log. Its failure is a warning, not an error.
  std::vector<std::string> ldconfig_dirs;
  std::vector<IdMapping> uid_mappings;  ///< empty: no user namespace
  std::vector<IdMapping> gid_mappings;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;  ///< sbx: user labels (--label)

  // sbx: run-time behaviour.
  std::string runtime = "native";               ///< "native" or "gvisor"
  std::chrono::milliseconds timeout{0};         ///< 0: none
  std::chrono::milliseconds idle_timeout{0};    ///< 0: none (create/exec)
  bool stdin_open = false;                      ///< -i
  /// Native, detached, with stdin_open: the stdin fd given to create is the
  /// master of a pty (the caller's, e.g. sbx serve's for a Tty container).
  /// Its slave (TIOCGPTPEER) becomes the first process's controlling
  /// terminal and stdin/stdout/stderr; the holder logs what the master reads
  /// (as stdout), and keeps the master open, so the process gets no hang-up
  /// when the caller goes away. The caller writes input and sets the size
  /// (TIOCSWINSZ) on its own copy.
  bool stdin_pty_master = false;
  /// sbx: egress rules, ports and DNS of NetworkMode::Private.
  NetworkOptions net;
};

/// Capabilities container engines grant by default (podman/docker/runc list).
const std::vector<std::string>& default_capabilities();

}  // namespace sbx::spec

namespace sbx {
// The value types are used everywhere as sbx::X; these keep that spelling.
using spec::default_capabilities;
using spec::DeviceNode;
using spec::DeviceRule;
using spec::Hook;
using spec::IdMapping;
using spec::Mount;
using spec::NetworkAttachment;
using spec::NetworkMode;
using spec::NetworkOptions;
using spec::PortMapping;
using spec::Process;
using spec::Resources;
using spec::Rlimit;
using spec::SandboxSpec;
}  // namespace sbx
