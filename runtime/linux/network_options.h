// The options of --network private that need no host state: flag
// validation, --publish parsing, and the /etc files a sandbox gets
// (resolv.conf, hosts). Pure functions, apart from reading /etc/resolv.conf.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// Whether `s` is an IPv4 address or CIDR (runtime/linux/netlink.h parse_cidr).
bool is_ipv4_cidr(const std::string& s);

/// Whether the options ask for egress rules of the sandbox's own
/// (--allow-egress or --deny-egress): then it gets chains and sets in
/// `inet sbx`; without them the table's shared rules cover it.
bool has_egress_rules(const spec::NetworkOptions& opts);

/// Checks `opts` without touching the host: CIDRs and IPs of
/// --allow/--deny-egress, --dns, --add-host, --publish ports. Throws
/// sbx::Error naming the flag and value.
void validate_network_options(const spec::NetworkOptions& opts);

/// "[HOST_IP:]HOST_PORT:CTR_PORT[/tcp|udp]" → a mapping. Throws sbx::Error.
spec::PortMapping parse_publish(const std::string& text);

/// The domain patterns of --allow-egress (example.test, *.example.test), lowercased.
std::vector<std::string> allowed_domains(const spec::NetworkOptions& opts);

/// The host's nameservers a sandbox can reach (resolv_conf_for with no
/// options: not 127.0.0.0/8), as dotted quads; the DNS proxy's upstreams.
std::vector<std::string> host_nameservers();

/// The sandbox's /etc/resolv.conf: with a domain allow-list only its DNS
/// proxy (`gateway`); else the --dns servers, else the host's nameservers
/// that a sandbox can reach (not 127.0.0.0/8), search and options lines kept
/// (as docker).
std::string resolv_conf_for(const spec::NetworkOptions& opts, uint32_t gateway);

/// The sandbox's /etc/hosts: localhost, `hostname` on its address, --add-host lines.
std::string hosts_for(const std::string& hostname, uint32_t address, const spec::NetworkOptions& opts);

}  // namespace sbx::runtime
