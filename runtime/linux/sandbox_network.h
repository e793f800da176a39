// --network private: a sandbox's own network namespace joined to the host by
// a veth pair ("sbx<id12>" on the host, "eth0" inside), a /30 from sbx's
// address pool (host side .1 = gateway, sandbox .2), NAT (masquerade) out
// through the host's routes, and its egress rules and published ports in
// sbx's one nftables table `inet sbx` (runtime/linux/nftables.h):
//
//   table inet sbx
//     forward (filter, prio -5): iifname vmap @egress → chain e-<id12> of a sandbox
//                                with egress rules; then rules all sbx* veths share (no
//                                other sandbox, link-local, multicast, IPv6; else open);
//                                into a sandbox: only replies and published ports
//     input   (filter, prio -5): iifname vmap @ingress → chain i-<id12>; then sbx* veths
//                                are refused (the host's own addresses, unless allowed)
//     prerouting/output (nat):   published ports (maps pub_tcp, pub_tcp_any, …: a
//                                second sandbox asking for a taken port gets EEXIST)
//     postrouting (nat):         masquerade from sbx* veths; 127/8 → a sandbox (-p from
//                                the host's own localhost)
//     sets a-<id12>, d-<id12>:   the sandbox's --allow-egress / --deny-egress CIDRs
//
// Each sandbox's network is a lease: RUN/sbx-net/<slot>.json (the address
// slot, the veth, the nft keys to delete), written before anything is made,
// so that release_network — or gc_networks after a SIGKILLed sbx — removes
// exactly what sbx made. The table goes with the last lease.
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
  bool rules = false;     ///< it has chains e-/i- and sets a-/d- of its own (egress rules)
  bool empty() const { return path.empty(); }
};

/// Checks `opts` without touching the host: CIDRs and IPs of
/// --allow/--deny-egress, --dns, --add-host, --publish ports. Throws
/// sbx::Error naming the flag and value.
void validate_network_options(const spec::NetworkOptions& opts);

/// Takes a free /30 of the pool and records the lease (before anything is
/// made), for sandbox `id` whose state dir is RUN_ROOT/<id>. Throws
/// sbx::Error when the pool is exhausted ("run 'sbx gc'") or on I/O errors.
NetworkLease allocate_network(const std::string& run_root, const std::string& id,
                              const spec::NetworkOptions& opts);

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

/// Releases the leases whose sandbox is gone (no state dir and no live
/// creator): after a SIGKILLed sbx or an `sbx rm`. Returns what it released.
/// No throw.
std::vector<std::string> gc_networks() noexcept;

/// The sandbox's /etc/resolv.conf: with a domain allow-list only its DNS
/// proxy (`gateway`); else the --dns servers, else the host's nameservers
/// that a sandbox can reach (not 127.0.0.0/8), search and options lines kept
/// (as docker).
std::string resolv_conf_for(const spec::NetworkOptions& opts, uint32_t gateway);

/// The domain patterns of --allow-egress (example.test, *.example.test), lowercased.
std::vector<std::string> allowed_domains(const spec::NetworkOptions& opts);

/// The sandbox's /etc/hosts: localhost, `hostname` on its address, --add-host lines.
std::string hosts_for(const std::string& hostname, uint32_t address, const spec::NetworkOptions& opts);

/// The nft script that adds the sandbox's published ports and, with egress
/// rules, its chains and sets to `inet sbx` (which must exist); empty for a
/// sandbox with neither (the table's shared rules cover it). Pure; for tests.
std::string nft_sandbox_script(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// The nft script that (re)creates `inet sbx` empty of sandboxes. Pure.
std::string nft_table_script();

/// "[HOST_IP:]HOST_PORT:CTR_PORT[/tcp|udp]" → a mapping. Throws sbx::Error.
spec::PortMapping parse_publish(const std::string& text);

/// Where leases live: $SBX_NETWORK_STATE or /run/sbx-net (one per host: the
/// kernel's addresses and nft table are shared by every --run-root).
std::string network_state_dir();

/// A human summary of the lease for inspect (address, gateway, ports, rules).
std::string describe_network(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// `inspect`'s NetworkSettings of sandbox `id` as JSON text (docker's names:
/// IPAddress, IPPrefixLen, Gateway, Ports {"80/tcp": [{HostIp, HostPort}]},
/// plus sbx's Interface, AllowEgress, DenyEgress, DnsProxyPid); "null" when
/// it has no private network. No throw.
std::string network_settings_json(const std::string& id) noexcept;

/// For `sbx info`: whether --network private works here, and how ("usable
/// (libnftables, pool 10.213.0.0/16, dnsmasq for domain rules)") or why not.
/// Creates nothing that stays. No throw.
std::string network_support() noexcept;

}  // namespace sbx::runtime
