// User-defined networks (`sbx network create`, `sbx run --network NAME`; the
// model is netavark's bridge driver with aardvark-dns): each network is a
// Linux bridge of its own ("sbb<id12>") with a subnet from $SBX_NETWORK_POOL
// (or the one asked for), its gateway on the bridge, NAT out, and the egress
// rules of `--network private` applied to the whole network (an allow/deny
// list, or --internal: no way out at all). A sandbox joins it through a veth
// ("sbp<12 hex>" on the bridge, eth0/eth1/… inside) with an address of the
// subnet and a MAC derived from it.
//
// Sandboxes on one network reach each other on every port; sandboxes on
// different networks, and the host's own services, do not (the rules of
// runtime/linux/network_rules.h: the refusals come first). A sandbox sends
// only from its own MAC and address on each network (table `bridge sbxnet`:
// no ARP or IP spoofing of a neighbour). Each network has a DNS server of its
// own (runtime/linux/dns_proxy.h) on its gateway: the names, aliases and short
// ids of the sandboxes on it (one hosts file per sandbox, read on change), and
// outside names as the network's egress rules allow.
//
// State, host-wide (the kernel's bridges and tables are), under
// network_state_dir():
//   networks/<id>/network.json  the network (its name is unique within its --run-root)
//   networks/<id>/addr/<a.b.c.d> an address taken (O_EXCL; the sandbox id)
//   networks/<id>/hosts/<sandbox id>  its names on the network's DNS
//   networks/<id>/dns.log       its DNS server's log
//   networks/subnets            the subnets of all networks (one line each):
//                               what a --network private slot must not take
//   sandboxes/<sandbox id>/<network id>.json  a sandbox's endpoint on a network
// Everything a network or endpoint makes is recorded before it is made, so
// that remove, release and gc (after a SIGKILLed sbx) remove exactly that.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/linux/netlink.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// A user-defined network, as recorded in networks/<id>/network.json.
struct UserNetwork {
  std::string id;        ///< 64 hex characters
  std::string name;      ///< unique among the networks of `run_root`
  std::string run_root;  ///< the --run-root it belongs to (ls shows these; gc removes it with that dir)
  std::string driver = "bridge";
  Ipv4Prefix subnet;
  uint32_t gateway = 0;  ///< on the bridge (host byte order); its DNS server listens there
  std::string bridge;    ///< "sbb" + id[0:12]
  bool internal = false; ///< no way out: only its own sandboxes and its DNS server
  std::vector<std::string> allow_egress, deny_egress;  ///< as `--network private` has them
  std::vector<std::string> dns;  ///< upstream servers of its DNS server (empty: the host's)
  std::map<std::string, std::string> labels;
  int64_t created_ms = 0;
  std::string state;     ///< "creating", "ready" or "removing" (gc finishes what a killed sbx left)
  pid_t creator_pid = 0;  ///< the sbx creating or removing it, with its start time
  uint64_t creator_start = 0;
  pid_t dns_pid = 0;      ///< its DNS server, with its start time
  uint64_t dns_start = 0;
};

/// One sandbox on one network: sandboxes/<sandbox id>/<network id>.json.
struct NetworkEndpoint {
  std::string path;          ///< the record; empty: none
  std::string sandbox_id;
  std::string run_root;      ///< where the sandbox's state dir is (its liveness, with `detached`)
  std::string network_id;
  std::string network_name;
  std::string bridge;
  uint32_t address = 0;      ///< host byte order
  int prefix_len = 24;
  uint32_t gateway = 0;
  std::string mac;           ///< "02:5b:" + the address: the only source MAC its port lets through
  std::string port;          ///< the host side of its veth, on the bridge
  std::string ifname;        ///< inside: eth0, eth1, …
  std::vector<std::string> names;  ///< what the network's DNS answers with its address
  std::vector<spec::PortMapping> publish;  ///< -p, to this address (the sandbox's first network)
  bool default_route = false;  ///< its default route goes through this network's gateway
  bool internal = false;
  int detached = 1;          ///< as NetworkLease::detached (1: until `sbx rm`; 0: while its sbx lives)
  pid_t creator_pid = 0;
  uint64_t creator_start = 0;
  bool attached = false;     ///< its veth was made (a release deletes it)
  bool empty() const { return path.empty(); }
};

/// `sbx network create`.
struct NetworkCreateOptions {
  std::string name;
  std::string subnet;   ///< CIDR; empty: a free one of the pool
  std::string gateway;  ///< in the subnet; empty: its first address
  bool internal = false;
  std::vector<std::string> allow_egress, deny_egress, dns;
  std::map<std::string, std::string> labels;
  std::string driver = "bridge";
};

/// The names sbx itself gives network modes: no user network may take them.
inline bool is_reserved_network_name(const std::string& name) {
  return name == "none" || name == "host" || name == "private" || name == "bridge";
}

/// The size of a network sbx picks from `pool` (a /24 from a /16, smaller
/// from small pools). Pure.
int default_subnet_len(Ipv4Prefix pool);

/// The subnet for a new network: the highest free block of `len` in `pool`
/// that overlaps none of `taken`. Throws sbx::Error (Conflict) when there is
/// none. Pure (for tests).
Ipv4Prefix pick_subnet(Ipv4Prefix pool, int len, const std::vector<Ipv4Prefix>& taken);

/// The MAC of an address on a network: 02:5b:a.b.c.d (locally administered,
/// unique per address). Pure.
std::string mac_for(uint32_t address);

/// The bridge port name of sandbox `sandbox_id` on network `network_id`:
/// "sbp" and 12 hex characters of a hash of both (IFNAMSIZ - 1). Pure.
std::string port_name(const std::string& sandbox_id, const std::string& network_id);

/// Creates a network in `run_root`'s scope: its record, bridge, rules and DNS
/// server; all or nothing. Throws sbx::Error: Invalid (a bad name, subnet,
/// gateway or egress entry), Conflict (the name is taken in this run root,
/// the subnet overlaps another network, a host interface or the pool's
/// private slots in use; the pool is full), or what the kernel, nftables or
/// dnsmasq said.
UserNetwork create_user_network(const std::string& run_root, const NetworkCreateOptions& opts);

/// The ready networks of `run_root`, oldest first. No throw for a torn record
/// (it is skipped).
std::vector<UserNetwork> list_user_networks(const std::string& run_root);

/// The network `ref` names in `run_root`: its name, full id or a unique id
/// prefix. Throws sbx::Error: NotFound ("no such network"), Invalid (an
/// ambiguous prefix).
UserNetwork find_user_network(const std::string& run_root, const std::string& ref);

/// The endpoints of the network's live sandboxes (a dead one's is released
/// on the way). No throw.
std::vector<NetworkEndpoint> network_endpoints(const UserNetwork& net) noexcept;

/// Removes the network `ref` names: its DNS server, rules, bridge and records.
/// Throws sbx::Error: NotFound, Conflict (sandboxes are on it: their names),
/// Forbidden (none, host, private).
void remove_user_network(const std::string& run_root, const std::string& ref);

/// Plans sandbox `sandbox_id`'s endpoints on `spec.net.networks` and records
/// them (addresses taken) before anything is made: the caller has made
/// RUN_ROOT/<id>. `names`: its names on the networks' DNS (name, hostname,
/// short id; each network's aliases are added). `detached`: as for leases.
/// Throws sbx::Error: NotFound (a network), Invalid (an --ip outside the
/// subnet, the same network twice), Conflict (an --ip taken, a network full);
/// nothing is left taken then.
std::vector<NetworkEndpoint> allocate_endpoints(const std::string& run_root, const std::string& sandbox_id,
                                                const spec::NetworkOptions& opts, const std::vector<std::string>& names,
                                                bool detached);

/// Makes the endpoints in the sandbox's network namespace `netns_fd`: each
/// veth on its bridge, the address, MAC and routes inside, its rules (the
/// spoofing guard, published ports) and its names on the network's DNS.
/// Throws sbx::Error; the caller then calls release_endpoints.
void attach_endpoints(std::vector<NetworkEndpoint>& eps, int netns_fd);

/// Removes everything of `eps` (names, rules, veths unless `namespace_gone`,
/// addresses, records). No throw.
void release_endpoints(std::vector<NetworkEndpoint>& eps, bool namespace_gone = false) noexcept;

/// The endpoints sandbox `sandbox_id` has on record (sandboxes/<id>/*.json). No throw.
std::vector<NetworkEndpoint> sandbox_endpoints(const std::string& sandbox_id) noexcept;

/// The sandbox's /etc/resolv.conf on user networks: the DNS server of each of
/// its networks (at most 3), those that forward no outside name first
/// (internal, a domain allow-list: they answer REFUSED for names they do not
/// know, so the resolver asks the next). Pure.
std::string endpoints_resolv_conf(const std::vector<NetworkEndpoint>& eps, const std::vector<UserNetwork>& nets);

/// Connects running sandbox `sandbox_id` (its network namespace `netns_fd`)
/// to a network: an endpoint as allocate_endpoints + attach_endpoints make at
/// start, on the next free ethN, without a default route. Throws sbx::Error:
/// Conflict (connected already), NotFound, and as allocate_endpoints.
NetworkEndpoint connect_endpoint(const std::string& run_root, const std::string& sandbox_id, int netns_fd,
                                 const spec::NetworkAttachment& a, const std::vector<std::string>& names,
                                 bool detached);

/// Disconnects sandbox `sandbox_id` from network `ref`. Throws sbx::Error
/// NotFound (no such network, or the sandbox is not on it).
void disconnect_endpoint(const std::string& run_root, const std::string& sandbox_id, const std::string& ref);

/// gc: releases endpoints of dead sandboxes, finishes networks whose create
/// or remove was killed, removes networks whose run root is gone. Returns
/// what it removed. No throw.
std::vector<std::string> gc_user_networks() noexcept;

/// Whether any network is on record (the table `inet sbxnet` stays while one
/// is). No throw.
bool any_user_network() noexcept;

/// The subnets of all networks (networks/subnets): a --network private slot
/// must not fall in one. No throw.
std::vector<Ipv4Prefix> user_network_subnets() noexcept;

/// `sbx network inspect` / Docker's GET /networks/{id}: Name, Id, Created,
/// Scope, Driver, EnableIPv6, IPAM {Driver, Config [{Subnet, Gateway}]},
/// Internal, Attachable, Containers {id: {Name, EndpointID, MacAddress,
/// IPv4Address, IPv6Address}}, Options, Labels; plus sbx's Bridge,
/// AllowEgress, DenyEgress, DnsServers (its upstreams), DnsPid, DnsLog.
/// `names`: sandbox id → its name (for Containers). Returns JSON text.
std::string user_network_json(const UserNetwork& net, const std::vector<NetworkEndpoint>& eps,
                              const std::map<std::string, std::string>& names);

}  // namespace sbx::runtime
