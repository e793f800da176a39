// The DNS server of a sandbox with a domain allow-list (--allow-egress
// example.test, *.example.test): a dnsmasq of its own on the host side of its
// veth (the sandbox's only nameserver). It forwards allowed names to the
// upstream servers, answers every other name NXDOMAIN, and puts each IPv4
// address it hands out into the sandbox's nft allow set (dnsmasq --nftset),
// so that only resolved addresses of allowed names become reachable: a raw
// IP never resolved through it stays refused, and other DNS servers are
// unreachable (no DNS exfiltration past the allow-list).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sbx::runtime {

/// Whether `text` is a domain pattern: a name of at least two labels
/// (letters, digits, '-'; no label starts or ends with '-'), optionally
/// "*." in front (subdomains only). No throw.
bool is_domain_pattern(const std::string& text);

/// The dnsmasq command line: listen on `listen` (host byte order) only,
/// forward `domains` to `upstreams`, add their A answers to nft set
/// `inet sbx <nft_set>`, NXDOMAIN for all else. Pure (for tests).
std::vector<std::string> dns_proxy_args(uint32_t listen, const std::vector<std::string>& domains,
                                        const std::vector<std::string>& upstreams, const std::string& nft_set);

/// A running proxy (pid and its /proc start time, so that a later stop never
/// signals a reused pid).
struct DnsProxy {
  pid_t pid = 0;
  uint64_t start_time = 0;
};

/// Starts dnsmasq with dns_proxy_args and returns once it answers on
/// `listen`:53 (TCP connect), at most 3 s. `die_with_caller`: it gets
/// SIGKILL when the calling thread ends (PR_SET_PDEATHSIG: `sbx run`; it
/// runs as root:root so that no credential change clears that);
/// otherwise it outlives sbx (`sbx create`) until stop_dns_proxy. Throws
/// sbx::Error when dnsmasq is missing ("install dnsmasq-base") or fails.
DnsProxy start_dns_proxy(uint32_t listen, const std::vector<std::string>& domains,
                         const std::vector<std::string>& upstreams, const std::string& nft_set, bool die_with_caller);

/// SIGKILLs and reaps (when our child) the proxy, if it is still that
/// process. No throw.
void stop_dns_proxy(const DnsProxy& p) noexcept;

/// SIGKILLs every dnsmasq whose command line fills nft set `inet sbx
/// <nft_set>`: the proxy of a sandbox whose sbx was killed before it could
/// record the proxy's pid. Scans /proc. No throw.
void kill_dns_proxies_for(const std::string& nft_set) noexcept;

}  // namespace sbx::runtime
