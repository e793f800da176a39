#include "runtime/linux/sandbox_network.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/dns_proxy.h"
#include "runtime/linux/nftables.h"
#include "runtime/state.h"

namespace sbx::runtime {

namespace {

using json = nlohmann::json;

constexpr const char* kTable = "inet sbx";

bool is_cidr(const std::string& s) {
  try {
    parse_cidr(s, "x");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace
std::vector<std::string> host_nameservers();
namespace {

std::string lock_path() { return network_state_dir() + "/lock"; }

std::string id12(const std::string& id) { return id.substr(0, 12); }

/// The CIDR entries of a list, as nft set elements ("a.b.c.d/n, …").
std::string cidr_elements(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& e : list) {
    if (!is_cidr(e)) continue;
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

json lease_json(const NetworkLease& l) {
  json pubs = json::array();
  for (const auto& p : l.publish)
    pubs.push_back({{"host_ip", p.host_ip}, {"host_port", p.host_port}, {"container_port", p.container_port},
                    {"protocol", p.protocol}});
  return {{"id", l.id},           {"run_root", l.run_root}, {"slot", l.slot},
          {"veth", l.veth},       {"gateway", format_ipv4(l.gateway)},
          {"address", format_ipv4(l.address)}, {"prefix_len", l.prefix_len},
          {"publish", pubs},      {"creator_pid", l.creator_pid}, {"creator_start", l.creator_start},
          {"dns_pid", l.dns_pid}, {"dns_start", l.dns_start},
          {"allow_egress", l.allow_egress}, {"deny_egress", l.deny_egress}, {"rules", l.rules}};
}

NetworkLease lease_from(const std::string& path) {
  json j = json::parse(fs::read_file(path));
  NetworkLease l;
  l.path = path;
  l.id = j.at("id");
  l.run_root = j.at("run_root");
  l.slot = j.at("slot");
  l.veth = j.at("veth");
  l.gateway = parse_ipv4(j.at("gateway"), "gateway");
  l.address = parse_ipv4(j.at("address"), "address");
  l.prefix_len = j.at("prefix_len");
  for (const auto& p : j.at("publish"))
    l.publish.push_back({p.at("host_ip"), p.at("host_port"), p.at("container_port"), p.at("protocol")});
  l.creator_pid = j.value("creator_pid", 0);
  l.creator_start = j.value("creator_start", uint64_t{0});
  l.dns_pid = j.value("dns_pid", 0);
  l.dns_start = j.value("dns_start", uint64_t{0});
  l.allow_egress = j.value("allow_egress", std::vector<std::string>{});
  l.deny_egress = j.value("deny_egress", std::vector<std::string>{});
  l.rules = j.value("rules", true);
  return l;
}

/// The lease files (<slot>.json) in the state dir.
std::vector<std::string> lease_files() {
  std::vector<std::string> out;
  std::string dir = network_state_dir();
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0 && n[0] != '.') out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  return out;
}

void write_sysctl(const std::string& path, const char* value) {
  if (fs::try_write_existing(path, value) != 0) throw_errno("write " + path);
}

/// Commands that undo nft_sandbox_script, one per line (each may fail alone
/// when the setup stopped half-way).
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

}  // namespace

std::string network_state_dir() {
  const char* e = std::getenv("SBX_NETWORK_STATE");
  return e && *e ? e : "/run/sbx-net";
}

Ipv4Prefix network_pool() {
  const char* e = std::getenv("SBX_NETWORK_POOL");
  Ipv4Prefix p = parse_cidr(e && *e ? e : kDefaultNetworkPool, "SBX_NETWORK_POOL");
  if (p.len < 8 || p.len > 28)
    throw Error("invalid SBX_NETWORK_POOL '" + std::string(e) + "': use a prefix of /8 to /28, such as 10.213.0.0/16");
  return p;
}

spec::PortMapping parse_publish(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error("invalid --publish '" + text + "': " + why +
                 " (expected [HOST_IP:]HOST_PORT:CONTAINER_PORT[/tcp|udp], e.g. 8080:80)");
  };
  spec::PortMapping m;
  std::string s = text;
  if (size_t slash = s.find('/'); slash != std::string::npos) {
    m.protocol = s.substr(slash + 1);
    s = s.substr(0, slash);
    if (m.protocol != "tcp" && m.protocol != "udp") throw bad("the protocol must be tcp or udp");
  }
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(':', start);
    parts.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (parts.size() == 3) {
    if (!parts[0].empty()) m.host_ip = format_ipv4(parse_ipv4(parts[0], "--publish host address"));
    parts.erase(parts.begin());
  }
  if (parts.size() != 2) throw bad("a host port and a container port are needed");
  auto port = [&](const std::string& p) {
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) throw bad("bad port '" + p + "'");
    int v = std::stoi(p);
    if (v < 1 || v > 65535) throw bad("ports are 1 to 65535");
    return static_cast<uint16_t>(v);
  };
  m.host_port = port(parts[0]);
  m.container_port = port(parts[1]);
  return m;
}

void validate_network_options(const spec::NetworkOptions& o) {
  for (const auto& a : o.allow_egress) {
    if (is_cidr(a) || is_domain_pattern(a)) continue;
    throw Error("invalid --allow-egress '" + a +
                "': expected an IPv4 address or CIDR (198.51.100.0/24), a domain (example.com) or *.DOMAIN");
  }
  for (const auto& d : o.deny_egress) parse_cidr(d, "--deny-egress");
  for (const auto& d : o.dns) parse_ipv4(d, "--dns");
  for (const auto& [name, ip] : o.extra_hosts) {
    if (name.empty() || name.find_first_of(" \t\n#") != std::string::npos)
      throw Error("invalid --add-host '" + name + ":" + ip + "': expected NAME:IP");
    parse_ipv4(ip, "--add-host address");
  }
  for (size_t i = 0; i < o.publish.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (o.publish[i].host_port == o.publish[j].host_port && o.publish[i].protocol == o.publish[j].protocol &&
          (o.publish[i].host_ip == o.publish[j].host_ip || o.publish[i].host_ip.empty() || o.publish[j].host_ip.empty()))
        throw Error("invalid --publish: host port " + std::to_string(o.publish[i].host_port) + "/" +
                    o.publish[i].protocol + " is given twice");
}

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

static bool needs_own_rules(const spec::NetworkOptions& o) { return !o.allow_egress.empty() || !o.deny_egress.empty(); }

std::string nft_sandbox_script(const NetworkLease& l, const spec::NetworkOptions& o) {
  const std::string s = id12(l.id), t = "inet sbx ";
  std::string allow = cidr_elements(o.allow_egress), deny = cidr_elements(o.deny_egress);
  bool has_allow = !o.allow_egress.empty();
  std::string out;
  // A port another sandbox holds: the element exists, nft says EEXIST.
  for (const auto& p : l.publish)
    out += "add element " + t + map_name(p) + " { " + pub_key(p) + " : " + format_ipv4(l.address) + " . " +
           std::to_string(p.container_port) + " }\n";
  if (!needs_own_rules(o)) return out;
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

NetworkLease allocate_network(const std::string& run_root, const std::string& id, const spec::NetworkOptions& o) {
  validate_network_options(o);
  Ipv4Prefix pool = network_pool();
  std::string dir = network_state_dir();
  fs::mkdir_p(dir, 0700);
  NetworkLease l;
  l.id = id;
  l.run_root = run_root;
  l.veth = "sbx" + id12(id);  // 15 chars: IFNAMSIZ - 1
  l.publish = o.publish;
  l.rules = needs_own_rules(o);
  l.allow_egress = o.allow_egress;
  l.deny_egress = o.deny_egress;
  l.creator_pid = ::getpid();
  l.creator_start = process_start_time(l.creator_pid);
  const uint32_t slots = 1u << (32 - pool.len - 2);  // one /30 each
  fs::FileLock lock(lock_path());
  // Round-robin from the slot after the last one handed out (RUN/next).
  uint32_t first = 0;
  try {
    first = static_cast<uint32_t>(std::stoul(fs::read_file(dir + "/next"))) % slots;
  } catch (const std::exception&) {
  }
  for (uint32_t n = 0; n < slots; ++n) {
    uint32_t slot = (first + n) % slots;
    std::string path = dir + "/" + std::to_string(slot) + ".json";
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) continue;
    {
      // A hint only (a torn write just starts the scan at 0): no temp file to leak.
      int fd = ::open((dir + "/next").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      std::string next = std::to_string((slot + 1) % slots);
      if (fd >= 0) {
        (void)!::write(fd, next.data(), next.size());
        ::close(fd);
      }
    }
    l.slot = slot;
    l.gateway = pool.addr + slot * 4 + 1;
    l.address = pool.addr + slot * 4 + 2;
    l.path = path;
    fs::write_file_atomic(path, lease_json(l).dump(), 0600);
    return l;
  }
  throw Error("the network address pool " + format_cidr(pool) + " is exhausted (" + std::to_string(slots) +
                  " sandboxes): run 'sbx gc', or set SBX_NETWORK_POOL to a larger range",
              ENOSPC);
}

void attach_network(NetworkLease& l, int netns_fd, const spec::NetworkOptions& o, bool detached) {
  // Host ports that a host process holds: refuse now, as docker does ("port
  // is already allocated"), rather than shadow that process.
  for (const auto& p : l.publish) {
    int fd = ::socket(AF_INET, (p.protocol == "udp" ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
    if (fd < 0) throw_errno("open a socket to check host port " + std::to_string(p.host_port));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(p.host_port);
    sa.sin_addr.s_addr = p.host_ip.empty() ? INADDR_ANY : htonl(parse_ipv4(p.host_ip, "--publish host address"));
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    int e = errno;
    ::close(fd);
    if (rc < 0 && e == EADDRINUSE)
      throw Error("cannot publish " + (p.host_ip.empty() ? "" : p.host_ip + ":") + std::to_string(p.host_port) + "/" +
                      p.protocol + ": the host port is already in use; pick another with -p HOST_PORT:" +
                      std::to_string(p.container_port),
                  EADDRINUSE);
    if (rc < 0 && e == EADDRNOTAVAIL)
      throw Error("cannot publish on " + p.host_ip + ": not an address of this host", EADDRNOTAVAIL);
  }
  RtNetlink host;
  host.add_veth(l.veth, "eth0", netns_fd);
  host.add_address(l.veth, {l.gateway, l.prefix_len});
  host.link_up(l.veth);
  // -p reachable from the host's own 127.0.0.1: the kernel routes a 127/8
  // source out of this link only with route_localnet (then masqueraded).
  if (!l.publish.empty()) write_sysctl("/proc/sys/net/ipv4/conf/" + l.veth + "/route_localnet", "1");
  RtNetlink inside = RtNetlink::in_netns(netns_fd);
  inside.add_address("eth0", {l.address, l.prefix_len});
  inside.link_up("eth0");
  inside.add_default_route("eth0", l.gateway);
  // NAT out needs forwarding, as with docker and podman.
  if (fs::read_file("/proc/sys/net/ipv4/ip_forward").rfind('1', 0) != 0) {
    log::info("enabling IPv4 forwarding (net.ipv4.ip_forward=1) for --network private");
    write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
  }
  std::optional<fs::FileLock> lock(lock_path());
  // The first lease (ours only): the table is made afresh. Otherwise it
  // must be there (a flushed ruleset would leave the sandbox unfiltered).
  // (Also when other leases exist but the table does not: an sbx killed
  // between its lease and its rules, or a flushed ruleset. No sandbox has
  // rules in a missing table, so making it afresh loses nothing.)
  std::string script;
  bool make_table = lease_files().size() <= 1;
  if (!make_table) {
    try {
      nft_apply("list chain inet sbx refuse\n", "check the nftables table inet sbx");
    } catch (const Error&) {
      make_table = true;
    }
  }
  if (make_table) script = nft_table_script();
  script += nft_sandbox_script(l, o);
  try {
    // (Nothing to add for a sandbox without rules or ports: no transaction.)
    if (!script.empty()) nft_apply(script, "set up the network rules of sandbox " + id12(l.id));
  } catch (const Error& e) {
    if (e.err() == EINVAL && std::string(e.what()).find("File exists") != std::string::npos && !l.publish.empty())
    {
      std::string ports;
      for (const auto& p : l.publish)
        ports += (ports.empty() ? "" : ", ") + (p.host_ip.empty() ? "" : p.host_ip + ":") +
                 std::to_string(p.host_port) + "/" + p.protocol;
      throw Error("cannot publish " + ports + ": the host port is already allocated to another sandbox ('sbx ps'); "
                  "pick another HOST_PORT",
                  EADDRINUSE);
    }
    throw;
  }
  lock.reset();
  if (auto domains = allowed_domains(o); !domains.empty()) {
    // After the rules: dnsmasq adds to the allow set, which must exist.
    std::vector<std::string> upstreams = o.dns;
    if (upstreams.empty()) upstreams = host_nameservers();
    DnsProxy p = start_dns_proxy(l.gateway, domains, upstreams, "a-" + id12(l.id), !detached);
    l.dns_pid = p.pid;
    l.dns_start = p.start_time;
    try {
      fs::write_file_atomic(l.path, lease_json(l).dump(), 0600);
    } catch (...) {
      stop_dns_proxy(p);
      throw;
    }
  }
}

void release_network(const NetworkLease& l, bool namespace_gone) noexcept {
  if (l.empty()) return;
  try {
    stop_dns_proxy({l.dns_pid, l.dns_start});
    // One whose pid never reached the lease (sbx killed right after starting it).
    if (!l.allow_egress.empty()) kill_dns_proxies_for("a-" + id12(l.id));
    fs::FileLock lock(lock_path());
    if (!namespace_gone) {
      try {
        RtNetlink host;
        host.delete_link(l.veth);  // often gone with the sandbox's namespace already
      } catch (const std::exception& e) {
        log::warn("release the network of sandbox " + id12(l.id) + ": " + e.what());
      }
    }
    bool last = true;
    for (const auto& f : lease_files()) last = last && f == l.path;
    if (last) {
      try {
        nft_apply("add table inet sbx\ndelete table inet sbx\n", "remove the nftables table inet sbx");
      } catch (const std::exception& e) {
        log::warn(e.what());
      }
    } else if (auto cmds = nft_release_commands(l); !cmds.empty()) {
      std::string all;
      for (const auto& c : cmds) all += c + "\n";
      try {
        nft_apply(all, "remove the network rules of sandbox " + id12(l.id));
      } catch (const Error&) {
        // Half-made (a start that failed part-way): each part that exists.
        for (const auto& c : cmds) {
          try {
            nft_apply(c + "\n", "remove");
          } catch (const Error&) {
          }
        }
      }
    }
    if (::unlink(l.path.c_str()) < 0 && errno != ENOENT) log::warn("cannot remove " + l.path + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    log::warn("release the network of sandbox " + id12(l.id) + ": " + e.what() + "; 'sbx gc' will retry");
  }
}

std::vector<std::string> gc_networks() noexcept {
  std::vector<std::string> out;
  try {
    // Temp files of a lease write whose sbx was killed (NAME.tmp.PID.N).
    std::string dir = network_state_dir();
    if (DIR* d = ::opendir(dir.c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        size_t t = n.find(".tmp.");
        if (t == std::string::npos) continue;
        pid_t pid = static_cast<pid_t>(std::atoi(n.c_str() + t + 5));
        if (pid > 0 && ::kill(pid, 0) < 0 && errno == ESRCH) ::unlinkat(::dirfd(d), e->d_name, 0);
      }
      ::closedir(d);
    }
    for (const auto& f : lease_files()) {
      NetworkLease l;
      try {
        l = lease_from(f);
      } catch (const std::exception&) {
        struct stat st {};
        if (::stat(f.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime > 60) ::unlink(f.c_str());
        continue;
      }
      bool creator_alive = l.creator_pid > 0 && process_start_time(l.creator_pid) == l.creator_start;
      if (creator_alive || fs::exists(l.run_root + "/" + l.id)) continue;
      release_network(l);
      out.push_back(l.veth + " (" + format_ipv4(l.address) + ")");
    }
  } catch (const std::exception& e) {
    log::warn(std::string("gc of sandbox networks: ") + e.what());
  }
  return out;
}

std::vector<std::string> allowed_domains(const spec::NetworkOptions& o) {
  std::vector<std::string> out;
  for (auto a : o.allow_egress) {
    if (is_cidr(a) || !is_domain_pattern(a)) continue;
    for (auto& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(a);
  }
  return out;
}

std::vector<std::string> host_nameservers() {
  std::vector<std::string> out;
  spec::NetworkOptions none;
  std::string text = resolv_conf_for(none, 0);
  size_t pos = 0;
  while ((pos = text.find("nameserver ", pos)) != std::string::npos) {
    pos += 11;
    out.push_back(text.substr(pos, text.find('\n', pos) - pos));
  }
  return out;
}

std::string resolv_conf_for(const spec::NetworkOptions& o, uint32_t gateway) {
  std::string out = "# written by sbx for --network private\n";
  if (!allowed_domains(o).empty()) return out + "nameserver " + format_ipv4(gateway) + "\n";
  if (!o.dns.empty()) {
    for (const auto& d : o.dns) out += "nameserver " + d + "\n";
    return out;
  }
  std::string host;
  try {
    host = fs::read_file("/etc/resolv.conf");
  } catch (const Error&) {
  }
  size_t pos = 0;
  while (pos < host.size()) {
    size_t nl = host.find('\n', pos);
    std::string line = host.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? host.size() : nl + 1;
    if (line.rfind("nameserver", 0) == 0) {
      std::string ip = line.substr(10);
      ip.erase(0, ip.find_first_not_of(" \t"));
      ip = ip.substr(0, ip.find_first_of(" \t"));
      // A resolver on the host's loopback (systemd-resolved) is not reachable from the sandbox.
      if (!is_cidr(ip) || (parse_ipv4(ip, "nameserver") >> 24) == 127) continue;
      out += "nameserver " + ip + "\n";
    } else if (line.rfind("search", 0) == 0 || line.rfind("options", 0) == 0) {
      out += line + "\n";
    }
  }
  return out;
}

std::string hosts_for(const std::string& hostname, uint32_t address, const spec::NetworkOptions& o) {
  std::string out = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  out += format_ipv4(address) + "\t" + hostname + "\n";
  for (const auto& [name, ip] : o.extra_hosts) out += ip + "\t" + name + "\n";
  return out;
}

std::string describe_network(const NetworkLease& l, const spec::NetworkOptions& o) {
  std::string out = "address " + format_ipv4(l.address) + "/" + std::to_string(l.prefix_len) + " gateway " +
                    format_ipv4(l.gateway) + " veth " + l.veth;
  for (const auto& p : l.publish)
    out += "; publish " + (p.host_ip.empty() ? "0.0.0.0" : p.host_ip) + ":" + std::to_string(p.host_port) + "->" +
           std::to_string(p.container_port) + "/" + p.protocol;
  for (const auto& a : o.allow_egress) out += "; allow " + a;
  for (const auto& d : o.deny_egress) out += "; deny " + d;
  return out;
}

std::string network_settings_json(const std::string& id) noexcept {
  try {
    for (const auto& f : lease_files()) {
      NetworkLease l;
      try {
        l = lease_from(f);
      } catch (const std::exception&) {
        continue;
      }
      if (l.id != id) continue;
      json ports = json::object();
      for (const auto& p : l.publish)
        ports[std::to_string(p.container_port) + "/" + p.protocol].push_back(
            {{"HostIp", p.host_ip.empty() ? "0.0.0.0" : p.host_ip}, {"HostPort", std::to_string(p.host_port)}});
      json j = {{"Mode", "private"},
                {"IPAddress", format_ipv4(l.address)},
                {"IPPrefixLen", l.prefix_len},
                {"Gateway", format_ipv4(l.gateway)},
                {"Interface", l.veth},
                {"Ports", ports},
                {"AllowEgress", l.allow_egress},
                {"DenyEgress", l.deny_egress},
                {"NftTable", "inet sbx"},
                {"NftChains", {"e-" + id12(l.id), "i-" + id12(l.id)}}};
      if (l.dns_pid > 0) j["DnsProxyPid"] = l.dns_pid;
      return j.dump();
    }
  } catch (const std::exception&) {
  }
  return "null";
}

std::string network_support() noexcept {
  std::string why = nft_problem();
  if (!why.empty()) return "NOT usable: " + why;
  std::string pool;
  try {
    pool = format_cidr(network_pool());
  } catch (const std::exception& e) {
    return std::string("NOT usable: ") + e.what();
  }
  bool dnsmasq = ::access("/usr/sbin/dnsmasq", X_OK) == 0 || ::access("/sbin/dnsmasq", X_OK) == 0;
  return std::string("usable (nftables through ") + nft_backend() + ", pool " + pool + ", " +
         (dnsmasq ? "dnsmasq for domain rules" : "no dnsmasq: domain rules need dnsmasq-base") + ")";
}

}  // namespace sbx::runtime
