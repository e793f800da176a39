// The DNS servers sbx runs for sandboxes, each a dnsmasq of its own on a
// host-side address only sandboxes reach:
//  - a --network private sandbox with a domain allow-list (--allow-egress
//    example.test, *.example.test) gets one on the host side of its veth (its
//    only nameserver): it forwards allowed names to the upstream servers,
//    answers no other name (REFUSED), and puts each IPv4 address it hands out
//    into the sandbox's nft allow set (dnsmasq --nftset), so that only
//    resolved addresses of allowed names become reachable: a raw IP never
//    resolved through it stays refused, and other DNS servers are
//    unreachable (no DNS exfiltration past the allow-list);
//  - a user-defined network gets one on its gateway (runtime/linux/user_network.h):
//    the names of the sandboxes on it (--hostsdir), and outside names as the
//    network's egress rules allow.
// An upstream answer with an address sbx refuses to sandboxes anyway (the
// host's own, sbx's pool, link-local, loopback, multicast) is dropped: the
// sandbox gets NXDOMAIN and nothing enters an allow set (dnsmasq
// --bogus-nxdomain); the log (--log-queries) shows it as "config NAME is
// NXDOMAIN" right after "forwarded NAME".
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/linux/netlink.h"

namespace sbx::runtime {

/// The most bytes a DNS server's log grows to (RLIMIT_FSIZE of its dnsmasq:
/// writes beyond fail, the server goes on): a sandbox that floods it with
/// queries costs the host this much of /run, not more.
inline constexpr uint64_t kDnsLogBytes = 1 << 20;

/// Whether `text` is a domain pattern: a name of at least two labels
/// (letters, digits, '-'; no label starts or ends with '-'), optionally
/// "*." in front (subdomains only). No throw.
bool is_domain_pattern(const std::string& text);

/// What one DNS server answers.
struct DnsServerConfig {
  uint32_t listen = 0;                 ///< its address (host byte order), port 53
  std::vector<std::string> upstreams;  ///< servers outside names are forwarded to (dotted quads)
  /// Outside names it resolves: these domain patterns (their A answers go
  /// into `nft_set`), or every name (`forward_all`), or none (both empty).
  std::vector<std::string> domains;
  bool forward_all = false;
  std::string nft_set;                 ///< `inet sbxnet <nft_set>`: the allow set `domains` open
  std::vector<Ipv4Prefix> refused;     ///< an answer with an address in one of these: dropped
  std::string hosts_dir;               ///< sandbox names (hosts files, read on change); empty: none
  bool no_negative_cache = false;      ///< a name that appears later (a sandbox started) answers at once
  std::string log_path;                ///< queries and drops, at most kDnsLogBytes
};

/// The dnsmasq command line for `cfg`. Pure (for tests).
std::vector<std::string> dns_proxy_args(const DnsServerConfig& cfg);

/// The ranges whose addresses no sandbox reaches, so no DNS answer may hand
/// them out: 0/8, loopback, link-local, multicast and above (224/3), `pool`
/// and `extra`, and every IPv4 address of the host's interfaces not inside
/// those (getifaddrs(3)). No throw.
std::vector<Ipv4Prefix> refused_answer_ranges(Ipv4Prefix pool, const std::vector<Ipv4Prefix>& extra = {}) noexcept;

/// A running proxy (pid and its /proc start time, so that a later stop never
/// signals a reused pid).
struct DnsProxy {
  pid_t pid = 0;
  uint64_t start_time = 0;
};

/// Starts dnsmasq for `cfg` and returns once it answers on `cfg.listen`:53
/// (TCP connect), at most 3 s. `die_with_caller`: it gets SIGKILL when the
/// calling thread ends (PR_SET_PDEATHSIG: `sbx run`; it runs as root:root so
/// that no credential change clears that); otherwise it outlives sbx (`sbx
/// create`, networks) until stop_dns_proxy. Throws sbx::Error when dnsmasq
/// is missing ("install dnsmasq-base") or fails.
DnsProxy start_dns_proxy(const DnsServerConfig& cfg, bool die_with_caller);

/// SIGKILLs and reaps (when our child) the proxy, if it is still that
/// process. No throw.
void stop_dns_proxy(const DnsProxy& p) noexcept;

/// SIGKILLs every dnsmasq with the argument "--log-facility=`log_path`"
/// (each server's log is its own): the server of a sandbox or network whose
/// sbx was killed before it could record the server's pid. Scans /proc. No throw.
void kill_dns_proxies_for(const std::string& log_path) noexcept;

}  // namespace sbx::runtime
