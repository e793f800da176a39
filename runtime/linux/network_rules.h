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

/// The nft script that adds the sandbox's published ports, its DNS server's
/// address (with a domain allow-list) and, with egress rules, its chain and
/// sets to `inet sbxnet` (which must exist); empty for a sandbox with none of
/// them (the table's shared rules cover it). Pure; for tests.
std::string nft_sandbox_script(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// The nft script that (re)creates `inet sbxnet` empty of sandboxes. Pure.
std::string nft_table_script();

/// An nft command that succeeds only when `inet sbxnet` exists with this
/// sbx's layout (its newest object): the check before adding to it.
std::string nft_table_probe();

/// The nft commands that undo nft_sandbox_script for `lease`, one per entry
/// (each may fail alone when the setup stopped half-way). Pure.
std::vector<std::string> nft_release_commands(const NetworkLease& lease);

}  // namespace sbx::runtime
