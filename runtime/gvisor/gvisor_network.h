// --network private for gVisor sandboxes: the same lease, veth, nft rules and
// DNS proxy as the native backend (runtime/linux/sandbox_network.h), in a
// network namespace that sbx makes and hands to runsc through config.json's
// linux.namespaces (type network, path); runsc runs with --network=sandbox,
// so gVisor's netstack takes over the veth (its addresses and routes) inside
// that namespace. The rules live on the host side of the veth, outside the
// sandbox, so they hold against the Sentry too.
#pragma once
#include <string>

#include "runtime/linux/sandbox_network.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime::gvisor {

/// A gVisor sandbox's private network while sbx sets it up. Move-only.
struct GvisorNetwork {
  SandboxNetworks lease;  ///< its --network private lease or its endpoints on user-defined networks
  int netns_fd = -1;       ///< holds the namespace until runsc's sandbox process has joined it
  std::string netns_path;  ///< /proc/<sbx pid>/fd/<netns_fd>: what config.json names

  GvisorNetwork() = default;
  GvisorNetwork(GvisorNetwork&& o) noexcept;
  GvisorNetwork& operator=(GvisorNetwork&& o) noexcept;
  GvisorNetwork(const GvisorNetwork&) = delete;
  GvisorNetwork& operator=(const GvisorNetwork&) = delete;
  ~GvisorNetwork() { close_namespace(); }
  /// Closes netns_fd (the namespace then lives as long as runsc's sandbox).
  void close_namespace() noexcept;
};

/// For `spec` with NetworkMode::Private or User (sandbox `spec.id` whose state
/// dir is `run_root`/<id>): takes a lease or endpoints (allocate_sandbox_networks), writes /etc/hostname,
/// /etc/hosts and /etc/resolv.conf into `files_dir` and adds them to
/// spec.mounts as read-only binds (runsc's gofer serves them), sets
/// spec.hostname (default: the first 12 characters of the id, as native),
/// makes a new network namespace and attaches the network to it
/// (attach_sandbox_networks; `detached`: the DNS proxy outlives this sbx). The caller
/// puts netns_path into config.json and runs runsc with --network=sandbox.
/// Throws sbx::Error; what was made is released first.
GvisorNetwork prepare_network(SandboxSpec& spec, const std::string& run_root, const std::string& files_dir,
                              bool detached);

/// runsc up to 20240729 (Debian's) refuses --network=sandbox in what it
/// takes for the host's network namespace: one whose
/// /proc/sys/net/core/rmem_default exists, which newer kernels (6.18 here)
/// show in every namespace, so it refuses every sandbox. In runsc's own
/// private mount namespace (the caller's; runsc's sandbox and gofer mount a
/// /proc of their own), /proc/sys/net is covered by an empty read-only tmpfs
/// so that the check passes; runsc itself needs nothing from there. Throws
/// sbx::Error.
void hide_host_net_sysctls_from_runsc();

/// Closes the namespace fd and releases the lease (release_network). Call
/// after runsc has ended (run) or on a failed create. No throw.
void release_network(GvisorNetwork& net) noexcept;

}  // namespace sbx::runtime::gvisor
