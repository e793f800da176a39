// The nftables side of --network private: sbx's one table `inet sbx` and
// each sandbox's elements, chains and sets in it, as nft scripts (applied by
// runtime/linux/nftables.h in one transaction). Pure text: tested without a
// kernel in tests/unit/test_sandbox_network.cpp.
#pragma once
#include <string>
#include <vector>

#include "runtime/linux/network_lease.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// The nft script that adds the sandbox's published ports and, with egress
/// rules, its chains and sets to `inet sbx` (which must exist); empty for a
/// sandbox with neither (the table's shared rules cover it). Pure; for tests.
std::string nft_sandbox_script(const NetworkLease& lease, const spec::NetworkOptions& opts);

/// The nft script that (re)creates `inet sbx` empty of sandboxes. Pure.
std::string nft_table_script();

/// The nft commands that undo nft_sandbox_script for `lease`, one per entry
/// (each may fail alone when the setup stopped half-way). Pure.
std::vector<std::string> nft_release_commands(const NetworkLease& lease);

}  // namespace sbx::runtime
