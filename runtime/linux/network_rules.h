// The nftables side of sbx's networks: sbx's table `inet sbxnet` and each
// sandbox's elements, chains and sets in it, as nft scripts (applied by
// runtime/linux/nftables.h in one transaction). Pure text: tested without a
// kernel in tests/unit/test_sandbox_network.cpp.
//
// The order of the rules is the security argument (SECURITY.md, "Network"):
// what no allow-list may open is refused first — another sandbox (of any
// network, and an older sbx's "sbx*" veths), the host itself (only the DNS
// server sbx runs for the sandbox is reachable there), link-local (cloud
// metadata), loopback, multicast and broadcast, IPv6, and a source address
// that is not the sandbox's own — and only then does a sandbox's allow or
// deny list decide. A DNS answer of an allowed name cannot open any of them.
#pragma once
#include <string>
#include <vector>

#include "runtime/linux/network_lease.h"
#include "runtime/linux/user_network.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// sbx's table, as nft names it. (The layout before the refusal-first order
/// was `inet sbx` with "sbx*" veths: a new name, so that an older sbx's
/// sandboxes still running keep their own table and neither filters the
/// other's interfaces.)
inline constexpr const char* kNftTable = "inet sbxnet";

/// The host side of a --network private sandbox's veth: this prefix and the
/// first 12 characters of its id (IFNAMSIZ - 1 = 15 characters).
inline constexpr const char* kPrivateVethPrefix = "sbv";
/// A user-defined network's bridge: this prefix and 12 characters of its id.
inline constexpr const char* kBridgePrefix = "sbb";
/// A sandbox's port on a bridge (runtime/linux/user_network.h port_name).
inline constexpr const char* kPortPrefix = "sbp";
/// sbx's table of the bridge family: what each bridge port may send (its
/// sandbox's own MAC and address, ARP and IPv4 only).
inline constexpr const char* kBridgeTable = "bridge sbxnet";

/// The nft script that adds the sandbox's published ports, its DNS server's
/// address (with a domain allow-list) and, with egress rules, its chain and
/// sets to `inet sbxnet` (which must exist); empty for a sandbox with none of
/// them (the table's shared rules cover it). Pure; for tests.
std::string nft_sandbox_script(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// The nft script that (re)creates `inet sbxnet` and `bridge sbxnet` empty
/// of sandboxes and networks. Pure.
std::string nft_table_script();

/// An nft command that succeeds only when sbx's tables exist with this sbx's
/// layout (its newest object): the check before adding to them.
std::string nft_table_probe();

/// The nft script that deletes sbx's tables (whether they exist or not). Pure.
std::string nft_table_delete_script();

/// The nft script that adds a user-defined network to `inet sbxnet`: its
/// bridge among "one network" (@same), its DNS server (@dns), and its egress
/// rules (chain en-<id12>, sets an-/dn-<id12>; internal: refused outright).
/// Pure.
std::string nft_network_script(const UserNetwork& net);

/// The commands that undo nft_network_script, one each. Pure.
std::vector<std::string> nft_network_release_commands(const UserNetwork& net);

/// The nft script of one endpoint: what its port may send (`bridge sbxnet`
/// @bound: port . MAC . address) and its published ports. Pure.
std::string nft_endpoint_script(const NetworkEndpoint& ep);

/// The commands that undo nft_endpoint_script, one each. Pure.
std::vector<std::string> nft_endpoint_release_commands(const NetworkEndpoint& ep);

/// The nft commands that undo nft_sandbox_script for `lease`, one per entry
/// (each may fail alone when the setup stopped half-way). Pure.
std::vector<std::string> nft_release_commands(const NetworkLease& lease);

}  // namespace sbx::runtime
