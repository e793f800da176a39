#include "runtime/linux/network_rules.h"

#include "runtime/linux/netlink.h"
#include "runtime/linux/network_options.h"

namespace sbx::runtime {

namespace {

/// The CIDR entries of a list, as nft set elements ("a.b.c.d/n, …").
std::string cidr_elements(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& e : list) {
    if (!is_ipv4_cidr(e)) continue;
    if (!out.empty()) out += ", ";
    out += format_cidr(parse_cidr(e, "CIDR"));
  }
  return out;
}

std::string map_name(const spec::PortMapping& p) {
  return "pub_" + p.protocol + (p.host_ip.empty() ? "_any" : "");
}

std::string pub_key(const spec::PortMapping& p) {
  return p.host_ip.empty() ? std::to_string(p.host_port) : p.host_ip + " . " + std::to_string(p.host_port);
}

}  // namespace

std::string nft_table_script() {
  // Deleted first (a table left by a host crash), then made whole: one
  // transaction, so nothing half-made is ever visible.
  return "add table inet sbx\n"
         "delete table inet sbx\n"
         "add table inet sbx\n"
         "add map inet sbx egress { type ifname : verdict; }\n"
         "add map inet sbx ingress { type ifname : verdict; }\n"
         "add map inet sbx pub_tcp { type ipv4_addr . inet_service : ipv4_addr . inet_service; }\n"
         "add map inet sbx pub_udp { type ipv4_addr . inet_service : ipv4_addr . inet_service; }\n"
         "add map inet sbx pub_tcp_any { type inet_service : ipv4_addr . inet_service; }\n"
         "add map inet sbx pub_udp_any { type inet_service : ipv4_addr . inet_service; }\n"
         // A refused connection fails fast: TCP gets a reset, the rest an ICMP
         // "administratively prohibited" (never a silent drop: no hangs).
         "add chain inet sbx refuse\n"
         "add rule inet sbx refuse meta l4proto tcp reject with tcp reset\n"
         "add rule inet sbx refuse reject with icmpx admin-prohibited\n"
         // Before other filter chains (priority filter - 5); ours only decide
         // for packets of sbx's veths. A sandbox with egress rules has its
         // own chain (vmap @egress: it accepts, refuses or returns); then the
         // rules every sandbox shares, so that a sandbox without rules of its
         // own costs no nftables transaction at start or end: no other
         // sandbox, no link-local (the cloud metadata address 169.254.169.254
         // among them), multicast or broadcast, no IPv6; all else is open.
         "add chain inet sbx forward { type filter hook forward priority filter - 5; policy accept; }\n"
         "add rule inet sbx forward iifname vmap @egress\n"
         "add rule inet sbx forward iifname \"sbx*\" ct state established,related accept\n"
         "add rule inet sbx forward iifname \"sbx*\" oifname \"sbx*\" goto refuse\n"
         "add rule inet sbx forward iifname \"sbx*\" meta nfproto ipv6 goto refuse\n"
         "add rule inet sbx forward iifname \"sbx*\" ip daddr { 169.254.0.0/16, 224.0.0.0/4, 255.255.255.255 } goto refuse\n"
         "add rule inet sbx forward iifname \"sbx*\" accept\n"
         // Into a sandbox: replies and published ports only.
         "add rule inet sbx forward oifname \"sbx*\" ct state established,related accept\n"
         "add rule inet sbx forward oifname \"sbx*\" ct status dnat accept\n"
         "add rule inet sbx forward oifname \"sbx*\" goto refuse\n"
         "add chain inet sbx input { type filter hook input priority filter - 5; policy accept; }\n"
         "add rule inet sbx input iifname vmap @ingress\n"
         // The host's own addresses: refused to sandboxes unless allowed (their chain).
         "add rule inet sbx input iifname \"sbx*\" ct state established,related accept\n"
         "add rule inet sbx input iifname \"sbx*\" goto refuse\n"
         "add chain inet sbx publish\n"
         "add rule inet sbx publish dnat ip to ip daddr . tcp dport map @pub_tcp\n"
         "add rule inet sbx publish dnat ip to ip daddr . udp dport map @pub_udp\n"
         "add rule inet sbx publish dnat ip to tcp dport map @pub_tcp_any\n"
         "add rule inet sbx publish dnat ip to udp dport map @pub_udp_any\n"
         "add chain inet sbx prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
         "add rule inet sbx prerouting fib daddr type local jump publish\n"
         // The host's own connections to a published port (localhost too).
         "add chain inet sbx output { type nat hook output priority -100; policy accept; }\n"
         "add rule inet sbx output fib daddr type local jump publish\n"
         "add chain inet sbx postrouting { type nat hook postrouting priority srcnat; policy accept; }\n"
         "add rule inet sbx postrouting iifname \"sbx*\" oifname != \"sbx*\" masquerade\n"
         "add rule inet sbx postrouting oifname \"sbx*\" ip saddr 127.0.0.0/8 masquerade\n";
}

std::string nft_sandbox_script(const NetworkLease& l, const spec::NetworkOptions& o) {
  const std::string s = id12(l.id), t = "inet sbx ";
  std::string allow = cidr_elements(o.allow_egress), deny = cidr_elements(o.deny_egress);
  bool has_allow = !o.allow_egress.empty();
  std::string out;
  // A port another sandbox holds: the element exists, nft says EEXIST.
  for (const auto& p : l.publish)
    out += "add element " + t + map_name(p) + " { " + pub_key(p) + " : " + format_ipv4(l.address) + " . " +
           std::to_string(p.container_port) + " }\n";
  if (!has_egress_rules(o)) return out;
  out += "add set " + t + "a-" + s + " { type ipv4_addr; flags interval; }\n";
  out += "add set " + t + "d-" + s + " { type ipv4_addr; flags interval; }\n";
  if (!allow.empty()) out += "add element " + t + "a-" + s + " { " + allow + " }\n";
  if (!deny.empty()) out += "add element " + t + "d-" + s + " { " + deny + " }\n";
  // Egress through the host (forward): deny wins, then allow; without an
  // allow list, back to the shared rules (nft_table_script).
  std::string e = "add rule " + t + "e-" + s + " ";
  out += "add chain " + t + "e-" + s + "\n";
  out += e + "ct state established,related accept\n";
  out += e + "meta nfproto ipv6 goto refuse\n";
  out += e + "ip daddr @d-" + s + " goto refuse\n";
  out += e + "ip daddr @a-" + s + " accept\n";
  if (has_allow) {
    out += e + "goto refuse\n";
  } else {
    out += e + "return\n";
  }
  // To the host itself (input): only what is explicitly allowed.
  std::string i = "add rule " + t + "i-" + s + " ";
  out += "add chain " + t + "i-" + s + "\n";
  out += i + "ct state established,related accept\n";
  out += i + "meta nfproto ipv6 goto refuse\n";
  if (!allowed_domains(o).empty()) {
    // Its DNS proxy on the host side of its veth: the one nameserver it has.
    out += i + "ip daddr " + format_ipv4(l.gateway) + " udp dport 53 accept\n";
    out += i + "ip daddr " + format_ipv4(l.gateway) + " tcp dport 53 accept\n";
  }
  out += i + "ip daddr @d-" + s + " goto refuse\n";
  out += i + "ip daddr @a-" + s + " accept\n";
  out += i + "goto refuse\n";
  out += "add element " + t + "egress { \"" + l.veth + "\" : goto e-" + s + " }\n";
  out += "add element " + t + "ingress { \"" + l.veth + "\" : goto i-" + s + " }\n";
  return out;
}

std::vector<std::string> nft_release_commands(const NetworkLease& l) {
  std::string s = id12(l.id);
  std::vector<std::string> cmds;
  if (l.rules) {
    cmds.push_back("delete element inet sbx egress { \"" + l.veth + "\" }");
    cmds.push_back("delete element inet sbx ingress { \"" + l.veth + "\" }");
  }
  for (const auto& p : l.publish) cmds.push_back("delete element inet sbx " + map_name(p) + " { " + pub_key(p) + " }");
  if (l.rules)
    for (const char* c : {"chain inet sbx e-", "chain inet sbx i-", "set inet sbx a-", "set inet sbx d-"})
      cmds.push_back(std::string("delete ") + c + s);
  return cmds;
}

}  // namespace sbx::runtime
