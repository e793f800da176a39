// --network private: a sandbox's own network namespace joined to the host by
// a veth pair ("sbv<id12>" on the host, "eth0" inside), a /30 from sbx's
// address pool (host side .1 = gateway, sandbox .2), NAT (masquerade) out
// through the host's routes, and its egress rules and published ports in
// sbx's one nftables table `inet sbxnet` (runtime/linux/nftables.h):
//
//   table inet sbxnet
//     guard   (filter, prerouting): a source address that is not the sandbox's own: dropped
//     forward (filter, prio -5): replies; then the refusals no allow-list opens (another
//                                sandbox, IPv6, link-local, loopback, multicast); then
//                                iifname vmap @egress → chain e-<id12> of a sandbox with
//                                egress rules (deny, allow); else open. Into a sandbox:
//                                only replies and published ports
//     input   (filter, prio -5): the host itself: only the sandbox's DNS proxy on its
//                                gateway (set @dns); all else refused
//     prerouting/output (nat):   published ports (maps pub_tcp, pub_tcp_any, …: a
//                                second sandbox asking for a taken port gets EEXIST)
//     postrouting (nat):         masquerade from sbv* veths; 127/8 → a sandbox (-p from
//                                the host's own localhost)
//     sets a-<id12>, d-<id12>:   the sandbox's --allow-egress / --deny-egress CIDRs
//
// Each sandbox's network is a lease (runtime/linux/network_lease.h), written
// before anything is made, so that release_network — at the end of `sbx
// run`, at `sbx rm` (release_sandbox_networks), or gc_networks after a
// SIGKILLed sbx — removes exactly what sbx made. The table goes with the last
// lease. The nft scripts are in network_rules.h, the flag checks and the
// sandbox's /etc files in network_options.h; this file makes and removes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/linux/network_lease.h"
#include "runtime/linux/network_options.h"
#include "runtime/linux/network_rules.h"
#include "runtime/linux/user_network.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// A sandbox's networks while sbx starts and runs it: a --network private
/// lease, or its endpoints on user-defined networks
/// (runtime/linux/user_network.h). Both backends hold one.
struct SandboxNetworks {
  NetworkLease lease;
  std::vector<NetworkEndpoint> endpoints;
  std::vector<UserNetwork> networks;  ///< the networks of `endpoints` (for resolv.conf)
  bool empty() const { return lease.empty() && endpoints.empty(); }
};

/// For spec.network Private or User (sandbox `id`, RUN_ROOT/<id> made
/// already): takes its lease or its endpoints' addresses, before its
/// namespace exists; empty for none and host. `hostname`: its name on its
/// networks' DNS (with spec.name, its short id and each network's aliases).
/// Throws sbx::Error (its kind: a network not found, an address taken, …);
/// nothing stays taken then.
SandboxNetworks allocate_sandbox_networks(const std::string& run_root, const std::string& id, const SandboxSpec& spec,
                                          const std::string& hostname, bool detached);

/// The sandbox's /etc/hosts and /etc/resolv.conf for `nets`. Pure but for
/// the host's /etc/resolv.conf (network_options.h).
std::string sandbox_hosts(const SandboxNetworks& nets, const std::string& hostname, const spec::NetworkOptions& opts);
std::string sandbox_resolv(const SandboxNetworks& nets, const spec::NetworkOptions& opts);

/// Makes `nets` in the namespace `netns_fd` (attach_network or
/// attach_endpoints). Throws sbx::Error; the caller then releases them.
void attach_sandbox_networks(SandboxNetworks& nets, int netns_fd, const spec::NetworkOptions& opts, bool detached);

/// Releases all of `nets` (release_network, release_endpoints); leaves it empty. No throw.
void release_network(SandboxNetworks& nets, bool namespace_gone = false) noexcept;

/// Makes the network of `lease` for the sandbox whose network namespace is
/// `netns_fd`: the veth pair, addresses, the sandbox's default route, its
/// rules and published ports in `inet sbx`, and with a domain allow-list its
/// DNS proxy (recorded in the lease; `detached`: it outlives this sbx, as the
/// sandbox does). Throws sbx::Error (a port that is taken, nftables or
/// dnsmasq missing); the caller then calls release_network.
void attach_network(NetworkLease& lease, int netns_fd, const spec::NetworkOptions& opts, bool detached);

/// Removes everything of `lease`: its DNS proxy, nft elements, chains and
/// sets, the host veth, the lease file; the table too when it was the last.
/// `namespace_gone`: the sandbox's init has been reaped, so the kernel
/// removes the veth pair with its network namespace (asynchronously); sbx
/// then does not delete it itself (an RTM_DELLINK waits ~20 ms for an RCU
/// grace period). Slots are handed out round-robin, so a veth that lingers a
/// moment never meets a new sandbox on its address. No throw (problems are logged).
void release_network(const NetworkLease& lease, bool namespace_gone = false) noexcept;

/// Releases the leases whose sandbox is gone (lease_in_use: a detached
/// sandbox's state dir removed, a `sbx run` whose sbx died), whoever else
/// is alive: after a SIGKILLed sbx, or an `sbx rm` that could not release
/// it. Reads every lease. Returns what it released. No throw.
std::vector<std::string> gc_networks() noexcept;

/// Releases the network state of sandbox `id` (its lease and its endpoints
/// on user-defined networks, through the index by id: nothing of another
/// sandbox is read): `sbx rm`, and every front end's remove, calls it once
/// the sandbox is gone. No throw.
void release_sandbox_networks(const std::string& id) noexcept;

/// A human summary of the lease for inspect (address, gateway, ports, rules).
std::string describe_network(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// `inspect`'s NetworkSettings of sandbox `id` as JSON text (docker's names:
/// IPAddress, IPPrefixLen, Gateway, MacAddress, Ports {"80/tcp": [{HostIp,
/// HostPort}]}, Networks {NAME: {NetworkID, EndpointID, IPAddress,
/// IPPrefixLen, Gateway, MacAddress, Aliases}} on user-defined networks, plus
/// sbx's Mode, Interface, AllowEgress, DenyEgress, DnsProxyPid, DnsLog);
/// "null" when it has no network of its own. No throw.
std::string network_settings_json(const std::string& id) noexcept;

/// Bytes sandbox `id` has received and sent over its private network so
/// far: its host-side veth's counters (/sys/class/net/sbv<id12>/statistics,
/// Documentation/ABI/testing/sysfs-class-net-statistics), swapped (what the
/// host side receives the sandbox sent). nullopt when it has no veth (no
/// private network, or it has ended: the veth goes with its namespace). No throw.
std::optional<std::pair<uint64_t, uint64_t>> network_io_bytes(const std::string& id) noexcept;

/// For `sbx info`: whether --network private works here, and how ("usable
/// (libnftables, pool 10.213.0.0/16, dnsmasq for domain rules)") or why not.
/// Creates nothing that stays. No throw.
std::string network_support() noexcept;

}  // namespace sbx::runtime
