// A sandbox's network choice as every front end names it: none, host,
// private (alias bridge), or the user-defined networks it joins.
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// Parses a --network value (none, host, private or its alias bridge, or
/// NAME[,NAME…] of user-defined networks: CLI11 joins a repeated flag with
/// ',') with --network-alias and --ip (for the first user-defined network)
/// into spec.network and spec.net.networks. Throws sbx::Error (Invalid): an
/// empty value, a mode beside networks, aliases or an address without a
/// user-defined network. Whether the networks exist is the start's check.
void apply_network_choice(SandboxSpec& spec, const std::string& network, const std::vector<std::string>& aliases,
                          const std::string& ip);

}  // namespace sbx::engine
