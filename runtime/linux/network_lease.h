// The lease store of --network private: one file per sandbox network,
// RUN/sbx-net/<slot>.json (the address slot, the veth, the nft keys to
// delete), written before anything is made, so that release_network — or
// gc_networks after a SIGKILLed sbx — removes exactly what sbx made
// (runtime/linux/sandbox_network.h). Slots are /30s of sbx's address pool,
// handed out round-robin under one flock(2). RUN/sbx-net/sandboxes/<id>/
// indexes a sandbox's network state by its id ("private": a link to its
// lease), so that `sbx rm` releases it without reading every lease.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/linux/netlink.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// The default address pool (overridden by $SBX_NETWORK_POOL): private,
/// away from docker's 172.17/16 and podman's 10.88/16.
inline constexpr const char* kDefaultNetworkPool = "10.213.0.0/16";

/// The pool in effect: $SBX_NETWORK_POOL (an IPv4 CIDR of /8 to /28) or the
/// default. Throws sbx::Error on a malformed value.
Ipv4Prefix network_pool();

/// One sandbox's private network, as recorded in its lease file.
struct NetworkLease {
  std::string id;         ///< sandbox id
  std::string run_root;   ///< where its state dir is (RUN_ROOT/<id>): gc's liveness check
  std::string path;       ///< the lease file; empty: none (nothing to release)
  uint32_t slot = 0;
  std::string veth;       ///< host side, "sbx" + id[0:12]
  uint32_t gateway = 0;   ///< host side address (host byte order)
  uint32_t address = 0;   ///< the sandbox's eth0 address
  int prefix_len = 30;
  std::vector<spec::PortMapping> publish;
  pid_t creator_pid = 0;  ///< the sbx that made it, with its start time
  uint64_t creator_start = 0;
  pid_t dns_pid = 0;      ///< its DNS proxy (runtime/linux/dns_proxy.h), with a domain allow-list
  uint64_t dns_start = 0;
  std::vector<std::string> allow_egress, deny_egress;  ///< as given (for inspect)
  bool rules = false;     ///< it has a chain e- and sets a-/d- of its own (egress rules)
  /// 1: a detached sandbox (sbx create, sbx serve): in use while its state
  /// dir RUN_ROOT/<id> exists (until `sbx rm`, whoever made it); 0: `sbx run`:
  /// in use while its sbx (creator_pid) lives; -1: a lease of an older sbx
  /// (either keeps it).
  int detached = -1;
  bool empty() const { return path.empty(); }
};

/// Whether the sandbox of `lease` still needs it (see NetworkLease::detached).
/// No throw.
bool lease_in_use(const NetworkLease& lease) noexcept;

/// RUN/sbx-net/sandboxes/<id>: the index of sandbox `id`'s network state.
std::string sandbox_network_index(const std::string& id);

/// The lease of sandbox `id` through its index, or an empty lease when it
/// has none (or it cannot be read: gc_networks then finds it). No throw.
NetworkLease find_lease(const std::string& id) noexcept;

/// Removes the lease file and its index entry. No throw.
void remove_lease_files(const NetworkLease& lease) noexcept;

/// Where leases live: $SBX_NETWORK_STATE or /run/sbx-net (one per host: the
/// kernel's addresses and nft table are shared by every --run-root).
std::string network_state_dir();

/// The lock file every change to the leases or to `inet sbx` holds (flock).
std::string network_lock_path();

/// The lease files (<slot>.json) in network_state_dir(), unsorted.
std::vector<std::string> lease_files();

/// Reads the lease at `path`. Throws sbx::Error (I/O) or a JSON error on a
/// torn or foreign file.
NetworkLease read_lease(const std::string& path);

/// Rewrites `lease` at lease.path atomically (0600). Throws sbx::Error.
void write_lease(const NetworkLease& lease);

/// Takes a free /30 of the pool and records the lease (before anything is
/// made), for sandbox `id` whose state dir RUN_ROOT/<id> the caller has
/// made already (a detached sandbox's lease lives as long as that dir).
/// `detached`: sbx create / serve (see NetworkLease::detached). Throws
/// sbx::Error when the pool is exhausted ("run 'sbx gc'") or on I/O errors.
NetworkLease allocate_network(const std::string& run_root, const std::string& id,
                              const spec::NetworkOptions& opts, bool detached);

/// The first 12 characters of a sandbox id: veth and nft names carry them.
inline std::string id12(const std::string& id) { return id.substr(0, 12); }

}  // namespace sbx::runtime
