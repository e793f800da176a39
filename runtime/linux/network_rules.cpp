#include "runtime/linux/network_rules.h"

#include "runtime/linux/netlink.h"
#include "runtime/linux/network_options.h"

namespace sbx::runtime {

namespace {

/// The interfaces of this sbx's sandboxes as the host's IP layer sees them:
/// private veths and network bridges (a bridge port never shows there: with
/// br_netfilter the bridge is the interface of a bridged packet too).
const char* const kOurs = "{ \"sbv*\", \"sbb*\" }";
/// Every sandbox interface a packet must not be forwarded to: ours and those
/// of an older sbx (its table `inet sbx` filters them too, but not ours).
const char* const kAnySandbox = "{ \"sbv*\", \"sbb*\", \"sbx*\" }";

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

bool has_domains(const std::vector<std::string>& allow) {
  spec::NetworkOptions o;
  o.allow_egress = allow;
  return !allowed_domains(o).empty();
}

std::string dns_key(const NetworkLease& l) { return "\"" + l.veth + "\" . " + format_ipv4(l.gateway); }

}  // namespace

std::string nft_table_script() {
  const std::string t = std::string(kNftTable) + " ", ours = kOurs, any = kAnySandbox;
  auto rule = [&](const std::string& chain, const std::string& r) { return "add rule " + t + chain + " " + r + "\n"; };
  // Deleted first (a table left by a host crash), then made whole: one
  // transaction, so nothing half-made is ever visible.
  std::string s = "add table " + t + "\ndelete table " + t + "\nadd table " + t + "\n";
  s += "add map " + t + "egress { type ifname : verdict; }\n";
  // Where a DNS server of sbx listens for a sandbox: (its interface . the
  // address), the one service of the host a sandbox reaches.
  s += "add set " + t + "dns { type ifname . ipv4_addr; }\n";
  // (bridge . bridge) of each network: one network's traffic.
  s += "add set " + t + "same { type ifname . ifname; }\n";
  for (const char* m : {"pub_tcp", "pub_udp"})
    s += "add map " + t + m + " { type ipv4_addr . inet_service : ipv4_addr . inet_service; }\n";
  for (const char* m : {"pub_tcp_any", "pub_udp_any"})
    s += "add map " + t + m + " { type inet_service : ipv4_addr . inet_service; }\n";
  // A refused connection fails fast: TCP gets a reset, the rest an ICMP
  // "administratively prohibited" (never a silent drop: no hangs).
  s += "add chain " + t + "refuse\n";
  s += rule("refuse", "meta l4proto tcp reject with tcp reset");
  s += rule("refuse", "reject with icmpx admin-prohibited");
  // A sandbox sends from its own address only: not another sandbox's, not
  // one of the host's, not one routed elsewhere (reverse-path check; before
  // conntrack's NAT at dstnat, so a forged source never gets a mapping).
  s += "add chain " + t + "guard { type filter hook prerouting priority -150; policy accept; }\n";
  s += rule("guard", "iifname " + ours + " fib saddr . iif oif missing drop");
  s += rule("guard", "iifname " + ours + " fib saddr type local drop");
  // Before other filter chains (priority filter - 5); ours only decide for
  // packets of sbx's interfaces. The refusals come first and hold whatever a
  // sandbox's own rules (vmap @egress: its allow/deny lists) would allow:
  // no other sandbox, no IPv6, no link-local (the cloud metadata address
  // 169.254.169.254 among them), loopback, multicast or broadcast. A sandbox
  // without rules of its own costs no nftables transaction at start or end.
  s += "add chain " + t + "forward { type filter hook forward priority filter - 5; policy accept; }\n";
  s += rule("forward", "iifname " + ours + " ct state established,related accept");
  s += rule("forward", "oifname " + ours + " ct state established,related accept");
  // The sandboxes of one network among themselves, on every port (routed
  // through the host, or bridged with br_netfilter loaded: iif = oif = the bridge).
  s += rule("forward", "iifname . oifname @same accept");
  s += rule("forward", "iifname " + ours + " oifname " + any + " goto refuse");
  s += rule("forward", "iifname " + ours + " meta nfproto ipv6 goto refuse");
  s += rule("forward", "iifname " + ours + " ip daddr { 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/3 } goto refuse");
  s += rule("forward", "iifname vmap @egress");
  s += rule("forward", "iifname " + ours + " accept");
  // Into a sandbox: replies (above) and published ports only.
  s += rule("forward", "oifname " + ours + " ct status dnat accept");
  s += rule("forward", "oifname " + ours + " goto refuse");
  // The host itself: only the DNS server sbx runs for the sandbox, on the
  // address it was given (set @dns); every other address and port of the
  // host is refused, whatever an allow-list says.
  s += "add chain " + t + "input { type filter hook input priority filter - 5; policy accept; }\n";
  s += rule("input", "iifname " + ours + " ct state established,related accept");
  s += rule("input", "iifname . ip daddr @dns udp dport 53 accept");
  s += rule("input", "iifname . ip daddr @dns tcp dport 53 accept");
  s += rule("input", "iifname " + ours + " goto refuse");
  s += "add chain " + t + "publish\n";
  s += rule("publish", "dnat ip to ip daddr . tcp dport map @pub_tcp");
  s += rule("publish", "dnat ip to ip daddr . udp dport map @pub_udp");
  s += rule("publish", "dnat ip to tcp dport map @pub_tcp_any");
  s += rule("publish", "dnat ip to udp dport map @pub_udp_any");
  s += "add chain " + t + "prerouting { type nat hook prerouting priority dstnat; policy accept; }\n";
  s += rule("prerouting", "fib daddr type local jump publish");
  // The host's own connections to a published port (localhost too).
  s += "add chain " + t + "output { type nat hook output priority -100; policy accept; }\n";
  s += rule("output", "fib daddr type local jump publish");
  s += "add chain " + t + "postrouting { type nat hook postrouting priority srcnat; policy accept; }\n";
  s += rule("postrouting", "iifname " + ours + " oifname != " + any + " masquerade");
  s += rule("postrouting", "oifname " + ours + " ip saddr 127.0.0.0/8 masquerade");
  // The bridge ports of user-defined networks: each sends from its sandbox's
  // MAC and address only (@bound: port . MAC . address), ARP and IPv4 only;
  // a forged frame is dropped before the bridge forwards it, so a sandbox
  // cannot take a neighbour's address (ARP or IP) nor speak IPv6 on it.
  const std::string b = std::string(kBridgeTable) + " ";
  s += "add table " + b + "\ndelete table " + b + "\nadd table " + b + "\n";
  s += "add set " + b + "bound { type ifname . ether_addr . ipv4_addr; }\n";
  s += "add chain " + b + "guard { type filter hook prerouting priority -300; policy accept; }\n";
  s += "add rule " + b + "guard iifname != \"" + kPortPrefix + "*\" accept\n";
  s += "add rule " + b + "guard ether type arp iifname . ether saddr . arp saddr ip @bound iifname . arp saddr ether . "
       "arp saddr ip @bound accept\n";
  s += "add rule " + b + "guard ether type ip iifname . ether saddr . ip saddr @bound accept\n";
  s += "add rule " + b + "guard drop\n";
  return s;
}

std::string nft_table_probe() { return "list set " + std::string(kBridgeTable) + " bound\n"; }

std::string nft_table_delete_script() {
  std::string s;
  for (const char* t : {kNftTable, kBridgeTable}) s += std::string("add table ") + t + "\ndelete table " + t + "\n";
  return s;
}

namespace {

/// The egress chain of one interface (a sandbox's veth, a network's bridge,
/// `iface` quoted): its allow set "a<tag>", deny set "d<tag>", chain
/// "e<tag>" and the verdict map element that sends the interface's forwarded
/// traffic there. Runs after the table's refusals: deny wins, then allow;
/// without an allow list, back to the shared rules.
std::string egress_chain_script(const spec::NetworkOptions& o, const std::string& tag, const std::string& iface) {
  const std::string t = std::string(kNftTable) + " ";
  std::string allow = cidr_elements(o.allow_egress), deny = cidr_elements(o.deny_egress);
  std::string out;
  out += "add set " + t + "a" + tag + " { type ipv4_addr; flags interval; }\n";
  out += "add set " + t + "d" + tag + " { type ipv4_addr; flags interval; }\n";
  if (!allow.empty()) out += "add element " + t + "a" + tag + " { " + allow + " }\n";
  if (!deny.empty()) out += "add element " + t + "d" + tag + " { " + deny + " }\n";
  std::string e = "add rule " + t + "e" + tag + " ";
  out += "add chain " + t + "e" + tag + "\n";
  out += e + "ip daddr @d" + tag + " goto refuse\n";
  out += e + "ip daddr @a" + tag + " accept\n";
  out += e + (o.allow_egress.empty() ? "return\n" : "goto refuse\n");
  out += "add element " + t + "egress { " + iface + " : goto e" + tag + " }\n";
  return out;
}

}  // namespace

std::string nft_network_script(const UserNetwork& n) {
  const std::string t = std::string(kNftTable) + " ", k = id12(n.id), br = "\"" + n.bridge + "\"";
  std::string out = "add element " + t + "same { " + br + " . " + br + " }\n";
  out += "add element " + t + "dns { " + br + " . " + format_ipv4(n.gateway) + " }\n";
  if (n.internal) return out + "add element " + t + "egress { " + br + " : goto refuse }\n";
  spec::NetworkOptions o;
  o.allow_egress = n.allow_egress;
  o.deny_egress = n.deny_egress;
  if (!has_egress_rules(o)) return out;
  return out + egress_chain_script(o, "n-" + k, br);
}

std::vector<std::string> nft_network_release_commands(const UserNetwork& n) {
  const std::string t = std::string(kNftTable) + " ", k = id12(n.id), br = "\"" + n.bridge + "\"";
  std::vector<std::string> cmds = {"delete element " + t + "egress { " + br + " }",
                                   "delete element " + t + "dns { " + br + " . " + format_ipv4(n.gateway) + " }",
                                   "delete element " + t + "same { " + br + " . " + br + " }"};
  cmds.push_back("delete chain " + t + "en-" + k);
  cmds.push_back("delete set " + t + "an-" + k);
  cmds.push_back("delete set " + t + "dn-" + k);
  return cmds;
}

std::string nft_endpoint_script(const NetworkEndpoint& ep) {
  std::string out = "add element " + std::string(kBridgeTable) + " bound { \"" + ep.port + "\" . " + ep.mac + " . " +
                    format_ipv4(ep.address) + " }\n";
  const std::string t = std::string(kNftTable) + " ";
  for (const auto& p : ep.publish)
    out += "add element " + t + map_name(p) + " { " + pub_key(p) + " : " + format_ipv4(ep.address) + " . " +
           std::to_string(p.container_port) + " }\n";
  return out;
}

std::vector<std::string> nft_endpoint_release_commands(const NetworkEndpoint& ep) {
  std::vector<std::string> cmds = {"delete element " + std::string(kBridgeTable) + " bound { \"" + ep.port + "\" . " +
                                   ep.mac + " . " + format_ipv4(ep.address) + " }"};
  for (const auto& p : ep.publish)
    cmds.push_back("delete element " + std::string(kNftTable) + " " + map_name(p) + " { " + pub_key(p) + " }");
  return cmds;
}

std::string nft_sandbox_script(const NetworkLease& l, const spec::NetworkOptions& o) {
  const std::string s = id12(l.id), t = std::string(kNftTable) + " ";
  std::string out;
  // A port another sandbox holds: the element exists, nft says EEXIST.
  for (const auto& p : l.publish)
    out += "add element " + t + map_name(p) + " { " + pub_key(p) + " : " + format_ipv4(l.address) + " . " +
           std::to_string(p.container_port) + " }\n";
  // Its DNS proxy on the host side of its veth: the one nameserver it has.
  if (!allowed_domains(o).empty()) out += "add element " + t + "dns { " + dns_key(l) + " }\n";
  if (!has_egress_rules(o)) return out;
  return out + egress_chain_script(o, "-" + s, "\"" + l.veth + "\"");
}

std::vector<std::string> nft_release_commands(const NetworkLease& l) {
  const std::string s = id12(l.id), t = std::string(kNftTable) + " ";
  std::vector<std::string> cmds;
  if (l.rules) cmds.push_back("delete element " + t + "egress { \"" + l.veth + "\" }");
  if (has_domains(l.allow_egress)) cmds.push_back("delete element " + t + "dns { " + dns_key(l) + " }");
  for (const auto& p : l.publish) cmds.push_back("delete element " + t + map_name(p) + " { " + pub_key(p) + " }");
  if (l.rules) {
    cmds.push_back("delete chain " + t + "e-" + s);
    cmds.push_back("delete set " + t + "a-" + s);
    cmds.push_back("delete set " + t + "d-" + s);
  }
  return cmds;
}

}  // namespace sbx::runtime
