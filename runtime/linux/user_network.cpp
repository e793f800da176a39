#include "runtime/linux/user_network.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/dns_proxy.h"
#include "runtime/linux/network_lease.h"
#include "runtime/linux/network_options.h"
#include "runtime/linux/network_rules.h"
#include "runtime/linux/nftables.h"
#include "runtime/state.h"

namespace sbx::runtime {

namespace {

using json = nlohmann::json;

std::string networks_dir() { return network_state_dir() + "/networks"; }
std::string net_dir(const std::string& id) { return networks_dir() + "/" + id; }
std::string net_record(const std::string& id) { return net_dir(id) + "/network.json"; }
std::string subnets_index() { return networks_dir() + "/subnets"; }
std::string hosts_file(const NetworkEndpoint& ep) { return net_dir(ep.network_id) + "/hosts/" + ep.sandbox_id; }
std::string addr_file(const std::string& net_id, uint32_t a) { return net_dir(net_id) + "/addr/" + format_ipv4(a); }
std::string dns_log(const std::string& net_id) { return net_dir(net_id) + "/dns.log"; }

uint32_t mask(int len) { return len == 0 ? 0 : ~((1u << (32 - len)) - 1); }
uint32_t last_addr(Ipv4Prefix p) { return p.addr | ~mask(p.len); }
bool overlaps(Ipv4Prefix a, Ipv4Prefix b) {
  int len = std::min(a.len, b.len);
  return (a.addr & mask(len)) == (b.addr & mask(len));
}
bool contains(Ipv4Prefix p, uint32_t a) { return (a & mask(p.len)) == p.addr; }

std::string random_hex64() {
  unsigned char b[32];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("getrandom for a network id");
    got += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

bool alive(pid_t pid, uint64_t start) { return pid > 0 && process_start_time(pid) == start; }

/// A run root as recorded (absolute, symlinks resolved when it exists): gc
/// checks it from any directory, and two spellings are one scope.
std::string scope_of(const std::string& run_root) {
  char buf[PATH_MAX];
  if (::realpath(run_root.c_str(), buf)) return buf;
  return run_root;
}

json network_json(const UserNetwork& n) {
  return {{"id", n.id},
          {"name", n.name},
          {"run_root", n.run_root},
          {"driver", n.driver},
          {"subnet", format_cidr(n.subnet)},
          {"gateway", format_ipv4(n.gateway)},
          {"bridge", n.bridge},
          {"internal", n.internal},
          {"allow_egress", n.allow_egress},
          {"deny_egress", n.deny_egress},
          {"dns", n.dns},
          {"labels", n.labels},
          {"created_ms", n.created_ms},
          {"state", n.state},
          {"creator_pid", n.creator_pid},
          {"creator_start", n.creator_start},
          {"dns_pid", n.dns_pid},
          {"dns_start", n.dns_start}};
}

UserNetwork read_network(const std::string& id) {
  json j = json::parse(fs::read_file(net_record(id)));
  UserNetwork n;
  n.id = j.at("id");
  n.name = j.at("name");
  n.run_root = j.at("run_root");
  n.driver = j.value("driver", "bridge");
  n.subnet = parse_cidr(j.at("subnet"), "subnet");
  n.gateway = parse_ipv4(j.at("gateway"), "gateway");
  n.bridge = j.at("bridge");
  n.internal = j.value("internal", false);
  n.allow_egress = j.value("allow_egress", std::vector<std::string>{});
  n.deny_egress = j.value("deny_egress", std::vector<std::string>{});
  n.dns = j.value("dns", std::vector<std::string>{});
  n.labels = j.value("labels", std::map<std::string, std::string>{});
  n.created_ms = j.value("created_ms", int64_t{0});
  n.state = j.value("state", "ready");
  n.creator_pid = j.value("creator_pid", 0);
  n.creator_start = j.value("creator_start", uint64_t{0});
  n.dns_pid = j.value("dns_pid", 0);
  n.dns_start = j.value("dns_start", uint64_t{0});
  return n;
}

void write_network(const UserNetwork& n) { fs::write_file_atomic(net_record(n.id), network_json(n).dump(), 0600); }

json endpoint_json(const NetworkEndpoint& e) {
  json pubs = json::array();
  for (const auto& p : e.publish)
    pubs.push_back({{"host_ip", p.host_ip}, {"host_port", p.host_port}, {"container_port", p.container_port},
                    {"protocol", p.protocol}});
  return {{"sandbox_id", e.sandbox_id},
          {"run_root", e.run_root},
          {"network_id", e.network_id},
          {"network_name", e.network_name},
          {"bridge", e.bridge},
          {"address", format_ipv4(e.address)},
          {"prefix_len", e.prefix_len},
          {"gateway", format_ipv4(e.gateway)},
          {"mac", e.mac},
          {"port", e.port},
          {"ifname", e.ifname},
          {"names", e.names},
          {"publish", pubs},
          {"default_route", e.default_route},
          {"internal", e.internal},
          {"detached", e.detached},
          {"creator_pid", e.creator_pid},
          {"creator_start", e.creator_start},
          {"attached", e.attached}};
}

NetworkEndpoint read_endpoint(const std::string& path) {
  json j = json::parse(fs::read_file(path));
  NetworkEndpoint e;
  e.path = path;
  e.sandbox_id = j.at("sandbox_id");
  e.run_root = j.at("run_root");
  e.network_id = j.at("network_id");
  e.network_name = j.value("network_name", "");
  e.bridge = j.at("bridge");
  e.address = parse_ipv4(j.at("address"), "address");
  e.prefix_len = j.at("prefix_len");
  e.gateway = parse_ipv4(j.at("gateway"), "gateway");
  e.mac = j.at("mac");
  e.port = j.at("port");
  e.ifname = j.at("ifname");
  e.names = j.value("names", std::vector<std::string>{});
  for (const auto& p : j.value("publish", json::array()))
    e.publish.push_back({p.at("host_ip"), p.at("host_port"), p.at("container_port"), p.at("protocol")});
  e.default_route = j.value("default_route", false);
  e.internal = j.value("internal", false);
  e.detached = j.value("detached", 1);
  e.creator_pid = j.value("creator_pid", 0);
  e.creator_start = j.value("creator_start", uint64_t{0});
  e.attached = j.value("attached", false);
  return e;
}

void write_endpoint(const NetworkEndpoint& e) { fs::write_file_atomic(e.path, endpoint_json(e).dump(), 0600); }

/// Whether the sandbox of an endpoint still needs it (as lease_in_use).
bool endpoint_in_use(const NetworkEndpoint& e) {
  if (e.detached == 1) return fs::exists(e.run_root + "/" + e.sandbox_id);
  return alive(e.creator_pid, e.creator_start);
}

/// Every network id on record (directory names), unsorted.
std::vector<std::string> network_ids() {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(networks_dir().c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() == 64 && n.find_first_not_of("0123456789abcdef") == std::string::npos) out.push_back(n);
    }
    ::closedir(d);
  }
  return out;
}

std::vector<UserNetwork> all_networks() {
  std::vector<UserNetwork> out;
  for (const auto& id : network_ids()) {
    try {
      out.push_back(read_network(id));
    } catch (const std::exception&) {
    }
  }
  return out;
}

/// Rewrites networks/subnets from the records (under the lock).
void write_subnets_index() {
  std::string text;
  for (const auto& n : all_networks()) text += format_cidr(n.subnet) + " " + n.id + "\n";
  fs::write_file_atomic(subnets_index(), text, 0600);
}

/// The IPv4 prefixes of the host's interfaces that are not sbx's own bridges
/// (getifaddrs(3)): a network must not overlap them.
std::vector<std::pair<std::string, Ipv4Prefix>> host_prefixes() {
  std::vector<std::pair<std::string, Ipv4Prefix>> out;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask) continue;
    if (std::strncmp(i->ifa_name, kBridgePrefix, 3) == 0) continue;
    uint32_t a = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    uint32_t m = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
    int len = __builtin_popcount(m);
    if ((a >> 24) == 127) continue;
    out.emplace_back(i->ifa_name, Ipv4Prefix{a & mask(len), len});
  }
  ::freeifaddrs(ifs);
  return out;
}

/// The /30s of --network private leases (every lease file: network create is rare).
std::vector<Ipv4Prefix> private_slots() {
  std::vector<Ipv4Prefix> out;
  for (const auto& f : lease_files()) {
    try {
      NetworkLease l = read_lease(f);
      out.push_back({l.gateway & mask(l.prefix_len), l.prefix_len});
    } catch (const std::exception&) {
    }
  }
  return out;
}

void validate_network_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  if (!ok)
    throw Error(ErrorKind::InvalidArgument, "invalid network name '" + name +
                                        "': use letters, digits, '_', '.' and '-' (first a letter or digit; at most 64)");
  if (is_reserved_network_name(name))
    throw Error(ErrorKind::InvalidArgument, "invalid network name '" + name + "': none, host, private and bridge are sbx's own "
                                    "network modes (--network)");
}

void validate_dns_name(const std::string& n, const std::string& what) {
  bool ok = !n.empty() && n.size() <= 253;
  for (char c : n) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_');
  if (!ok || n.front() == '.' || n.front() == '-')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + n + "': use letters, digits, '-', '_' and '.'");
}

/// Applies `cmds` one by one (some may be gone already). Under the lock.
void apply_each(const std::vector<std::string>& cmds, const std::string& what) {
  std::string all;
  for (const auto& c : cmds) all += c + "\n";
  try {
    nft_apply(all, what);
  } catch (const Error&) {
    for (const auto& c : cmds) {
      try {
        nft_apply(c + "\n", what);
      } catch (const Error&) {
      }
    }
  }
}

/// Whether sbx's tables are still needed besides `except_lease`.
bool tables_needed(const std::string& except_lease = "") {
  for (const auto& f : lease_files())
    if (f != except_lease) return true;
  return any_user_network();
}

/// Makes sbx's tables when missing (under the lock); returns the script
/// prefix to apply with the caller's own commands.
std::string ensure_tables() {
  try {
    nft_apply(nft_table_probe(), std::string("check the nftables table ") + kNftTable);
    return "";
  } catch (const Error&) {
  }
  if (!lease_files().empty()) {
    // Leases (of this or an older sbx) but no table of this layout: a flushed
    // ruleset, or an sbx killed before its rules. A private sandbox's rules
    // would be lost by making the table afresh only if it had them in a
    // table that is gone, so making it loses nothing.
    log::debug("nftables table " + std::string(kNftTable) + " missing: made afresh");
  }
  return nft_table_script();
}

/// Removes everything of network `n` that exists (DNS server, rules, bridge,
/// records). Under no lock; takes it for the rules. No throw.
void teardown_network(const UserNetwork& n) noexcept {
  try {
    stop_dns_proxy({n.dns_pid, n.dns_start});
    kill_dns_proxies_for(dns_log(n.id));
    fs::FileLock lock(network_lock_path());
    apply_each(nft_network_release_commands(n), "remove the rules of network " + n.name);
    try {
      RtNetlink host;
      host.delete_link(n.bridge);
    } catch (const std::exception& e) {
      log::warn("remove network " + n.name + ": " + e.what());
    }
    // The record goes last, so that a teardown killed half-way is still on record.
    for (const char* sub : {"/addr", "/hosts"}) remove_tree(net_dir(n.id) + sub);
    if (int e = remove_tree(net_dir(n.id)); e && e != ENOENT)
      log::warn("cannot remove " + net_dir(n.id) + ": " + std::strerror(e));
    write_subnets_index();
    if (!tables_needed()) {
      try {
        nft_apply(nft_table_delete_script(), "remove sbx's nftables tables");
      } catch (const std::exception& e) {
        log::warn(e.what());
      }
    }
  } catch (const std::exception& e) {
    log::warn("remove network " + n.name + ": " + e.what() + "; 'sbx gc' will retry");
  }
}

void write_sysctl_if_there(const std::string& path, const char* value) { (void)fs::try_write_existing(path, value); }

/// Starts the network's DNS server (its names, outside names per its rules).
DnsProxy start_network_dns(const UserNetwork& n) {
  DnsServerConfig c;
  c.listen = n.gateway;
  c.hosts_dir = net_dir(n.id) + "/hosts";
  c.log_path = dns_log(n.id);
  c.no_negative_cache = true;  // a name that appears later answers at once
  if (!n.internal) {
    spec::NetworkOptions o;
    o.allow_egress = n.allow_egress;
    c.domains = allowed_domains(o);
    c.upstreams = n.dns.empty() ? host_nameservers() : n.dns;
    if (!c.domains.empty()) {
      c.nft_set = "an-" + id12(n.id);
    } else if (n.allow_egress.empty()) {
      c.forward_all = true;
    }
  }
  std::vector<Ipv4Prefix> subnets;
  for (const auto& other : all_networks()) subnets.push_back(other.subnet);
  Ipv4Prefix pool{};
  try {
    pool = network_pool();
  } catch (const std::exception&) {
  }
  c.refused = refused_answer_ranges(pool, subnets);
  if (c.upstreams.empty() && (c.forward_all || !c.domains.empty())) {
    // No upstream to forward to (the host has only a loopback resolver): its
    // own names still resolve.
    c.forward_all = false;
    c.domains.clear();
  }
  return start_dns_proxy(c, false);
}

/// The next free address of `n` (O_EXCL under the lock), from its round-robin hint.
uint32_t take_address(const UserNetwork& n, const std::string& sandbox_id) {
  const uint32_t first = n.subnet.addr + 1, last = last_addr(n.subnet) - 1;
  if (last < first) throw Error(ErrorKind::Conflict, "network " + n.name + " has no room for sandboxes");
  const uint32_t count = last - first + 1;
  uint32_t start = 0;
  try {
    start = static_cast<uint32_t>(std::stoul(fs::read_file(net_dir(n.id) + "/next"))) % count;
  } catch (const std::exception&) {
  }
  for (uint32_t k = 0; k < count; ++k) {
    uint32_t a = first + (start + k) % count;
    if (a == n.gateway) continue;
    int fd = ::open(addr_file(n.id, a).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw_errno("take an address of network " + n.name);
    }
    (void)!::write(fd, sandbox_id.data(), sandbox_id.size());
    ::close(fd);
    try {
      fs::write_file_atomic(net_dir(n.id) + "/next", std::to_string((start + k + 1) % count), 0600);
    } catch (const std::exception&) {
    }
    return a;
  }
  throw Error(ErrorKind::Conflict, "network " + n.name + " (" + format_cidr(n.subnet) +
                                       ") has no free address: remove sandboxes from it, or use a larger --subnet");
}

/// Before taking `want` on `n` (not under the lock: a release takes it):
/// the endpoint of a dead sandbox that holds it is released.
void reclaim_address(const UserNetwork& n, uint32_t want) {
  std::string holder;
  try {
    holder = fs::read_file(addr_file(n.id, want));
  } catch (const std::exception&) {
    return;
  }
  if (holder.size() != 64 || holder.find('/') != std::string::npos) return;
  NetworkEndpoint e;
  try {
    e = read_endpoint(sandbox_network_index(holder) + "/" + n.id + ".json");
  } catch (const std::exception&) {
    return;
  }
  if (endpoint_in_use(e)) return;
  std::vector<NetworkEndpoint> v{e};
  release_endpoints(v, false);
}

/// Takes `want` on `n` for the sandbox (under the lock). An address file
/// whose endpoint record is missing is stale here (both are written under
/// the lock): taken over.
void take_fixed_address(const UserNetwork& n, uint32_t want, const std::string& sandbox_id) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(addr_file(n.id, want).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)!::write(fd, sandbox_id.data(), sandbox_id.size());
      ::close(fd);
      return;
    }
    if (errno != EEXIST) throw_errno("take the address " + format_ipv4(want) + " of network " + n.name);
    std::string holder;
    try {
      holder = fs::read_file(addr_file(n.id, want));
    } catch (const std::exception&) {
    }
    if (attempt == 0 && (holder.size() != 64 || !fs::exists(sandbox_network_index(holder) + "/" + n.id + ".json"))) {
      ::unlink(addr_file(n.id, want).c_str());
      continue;
    }
    throw Error(ErrorKind::Conflict, "the address " + format_ipv4(want) + " of network " + n.name +
                                         " is in use by sandbox " + holder.substr(0, 12));
  }
  throw Error(ErrorKind::Conflict, "the address " + format_ipv4(want) + " of network " + n.name + " is in use");
}

/// The hosts file line of an endpoint: "ADDR NAME…".
std::string hosts_line(const NetworkEndpoint& e) {
  std::string line = format_ipv4(e.address);
  for (const auto& n : e.names) line += " " + n;
  return line + "\n";
}

}  // namespace

int default_subnet_len(Ipv4Prefix pool) { return std::min(std::max(24, pool.len + 2), 29); }

Ipv4Prefix pick_subnet(Ipv4Prefix pool, int len, const std::vector<Ipv4Prefix>& taken) {
  if (len < pool.len) len = pool.len;
  const uint64_t blocks = uint64_t{1} << (len - pool.len);
  const uint32_t size = len == 0 ? 0 : (1u << (32 - len));
  for (uint64_t k = blocks; k-- > 0;) {
    Ipv4Prefix c{pool.addr + static_cast<uint32_t>(k) * size, len};
    bool free = true;
    for (const auto& t : taken) free = free && !overlaps(c, t);
    if (free) return c;
  }
  throw Error(ErrorKind::Conflict, "no free /" + std::to_string(len) + " left in the network pool " + format_cidr(pool) +
                                       ": remove networks ('sbx network prune'), give --subnet, or set SBX_NETWORK_POOL "
                                       "to a larger range");
}

std::string mac_for(uint32_t a) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "02:5b:%02x:%02x:%02x:%02x", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  return buf;
}

std::string port_name(const std::string& sandbox_id, const std::string& network_id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (char c : sandbox_id + "/" + network_id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%012llx", kPortPrefix, static_cast<unsigned long long>(h & 0xffffffffffffull));
  return buf;
}

UserNetwork create_user_network(const std::string& run_root, const NetworkCreateOptions& o) {
  validate_network_name(o.name);
  if (!o.driver.empty() && o.driver != "bridge")
    throw Error(ErrorKind::InvalidArgument, "invalid network driver '" + o.driver + "': sbx has bridge networks only");
  spec::NetworkOptions eg;
  eg.allow_egress = o.allow_egress;
  eg.deny_egress = o.deny_egress;
  eg.dns = o.dns;
  try {
    validate_network_options(eg);
  } catch (const Error& e) {
    throw Error(ErrorKind::InvalidArgument, e.what());
  }
  if (o.internal && (!o.allow_egress.empty() || !o.deny_egress.empty()))
    throw Error(ErrorKind::InvalidArgument, "--internal takes no --allow-egress or --deny-egress: an internal network has no "
                                    "way out at all");
  std::optional<Ipv4Prefix> subnet;
  if (!o.subnet.empty()) {
    Ipv4Prefix p;
    try {
      p = parse_cidr(o.subnet, "--subnet");
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidArgument, e.what());
    }
    if (p.len < 8 || p.len > 29)
      throw Error(ErrorKind::InvalidArgument, "invalid --subnet '" + o.subnet + "': use a prefix of /8 to /29");
    if (o.subnet.find('/') == std::string::npos || parse_ipv4(o.subnet.substr(0, o.subnet.find('/')), "x") != p.addr)
      throw Error(ErrorKind::InvalidArgument, "invalid --subnet '" + o.subnet + "': give the network's first address (" +
                                          format_cidr(p) + ")");
    subnet = p;
  }
  if (!o.gateway.empty() && !subnet) throw Error(ErrorKind::InvalidArgument, "--gateway needs --subnet");
  fs::mkdir_p(networks_dir(), 0700);
  fs::mkdir_p(run_root, 0700);  // its scope: gc removes the network once this dir is gone
  UserNetwork n;
  n.id = random_hex64();
  n.name = o.name;
  n.run_root = scope_of(run_root);
  n.bridge = kBridgePrefix + id12(n.id);
  n.internal = o.internal;
  n.allow_egress = o.allow_egress;
  n.deny_egress = o.deny_egress;
  n.dns = o.dns;
  n.labels = o.labels;
  n.created_ms = now_ms();
  n.state = "creating";
  n.creator_pid = ::getpid();
  n.creator_start = process_start_time(n.creator_pid);
  {
    fs::FileLock lock(network_lock_path());
    std::vector<Ipv4Prefix> taken;
    for (const auto& other : all_networks()) {
      if (other.run_root == n.run_root && other.name == o.name)
        throw Error(ErrorKind::Conflict, "network name '" + o.name + "' is in use (network " + id12(other.id) +
                                             "): pick another, or 'sbx network rm " + o.name + "' first");
      if (subnet && overlaps(*subnet, other.subnet))
        throw Error(ErrorKind::Conflict, "--subnet " + format_cidr(*subnet) + " overlaps network " + other.name + " (" +
                                             format_cidr(other.subnet) + ")");
      taken.push_back(other.subnet);
    }
    auto host = host_prefixes();
    if (subnet) {
      for (const auto& [ifname, p] : host)
        if (overlaps(*subnet, p))
          throw Error(ErrorKind::Conflict, "--subnet " + format_cidr(*subnet) + " overlaps " + format_cidr(p) +
                                               " of the host's " + ifname);
      for (const auto& s : private_slots())
        if (overlaps(*subnet, s))
          throw Error(ErrorKind::Conflict, "--subnet " + format_cidr(*subnet) + " overlaps " + format_cidr(s) +
                                               " of a --network private sandbox");
      n.subnet = *subnet;
    } else {
      Ipv4Prefix pool;
      try {
        pool = network_pool();
      } catch (const Error& e) {
        throw Error(ErrorKind::InvalidArgument, e.what());
      }
      for (const auto& [ifname, p] : host) taken.push_back(p);
      for (const auto& s : private_slots()) taken.push_back(s);
      n.subnet = pick_subnet(pool, default_subnet_len(pool), taken);
    }
    n.gateway = n.subnet.addr + 1;
    if (!o.gateway.empty()) {
      uint32_t g;
      try {
        g = parse_ipv4(o.gateway, "--gateway");
      } catch (const Error& e) {
        throw Error(ErrorKind::InvalidArgument, e.what());
      }
      if (!contains(n.subnet, g) || g == n.subnet.addr || g == last_addr(n.subnet))
        throw Error(ErrorKind::InvalidArgument, "invalid --gateway " + o.gateway + ": not a host address of " + format_cidr(n.subnet));
      n.gateway = g;
    }
    // The record first: a create killed at any later point leaves a record
    // ("creating", a dead creator) that gc tears down at once, never a
    // directory without one (which gc can only age out).
    fs::mkdir_p(net_dir(n.id), 0700);
    write_network(n);
    fs::mkdir_p(net_dir(n.id) + "/addr", 0700);
    fs::mkdir_p(net_dir(n.id) + "/hosts", 0755);
    write_subnets_index();
  }
  try {
    RtNetlink host;
    // The gateway's MAC, fixed (02:5b:<its address>, as a sandbox's).
    const uint8_t mac[6] = {0x02, 0x5b, static_cast<uint8_t>(n.gateway >> 24), static_cast<uint8_t>(n.gateway >> 16),
                            static_cast<uint8_t>(n.gateway >> 8), static_cast<uint8_t>(n.gateway)};
    host.add_bridge(n.bridge, mac);
    host.add_address(n.bridge, {n.gateway, n.subnet.len});
    // No IPv6 on the bridge (sandboxes get none), and -p from the host's own
    // 127.0.0.1 (masqueraded) reaches its sandboxes.
    write_sysctl_if_there("/proc/sys/net/ipv6/conf/" + n.bridge + "/disable_ipv6", "1");
    write_sysctl_if_there("/proc/sys/net/ipv4/conf/" + n.bridge + "/route_localnet", "1");
    host.link_up(n.bridge);
    if (fs::read_file("/proc/sys/net/ipv4/ip_forward").rfind('1', 0) != 0) {
      log::info("enabling IPv4 forwarding (net.ipv4.ip_forward=1) for sbx's networks");
      if (fs::try_write_existing("/proc/sys/net/ipv4/ip_forward", "1") != 0) throw_errno("enable IPv4 forwarding");
    }
    {
      fs::FileLock lock(network_lock_path());
      nft_apply(ensure_tables() + nft_network_script(n), "set up the rules of network " + n.name);
    }
    DnsProxy p = start_network_dns(n);
    n.dns_pid = p.pid;
    n.dns_start = p.start_time;
    n.state = "ready";
    write_network(n);
  } catch (...) {
    teardown_network(n);
    throw;
  }
  return n;
}

std::vector<UserNetwork> list_user_networks(const std::string& run_root) {
  std::vector<UserNetwork> out;
  const std::string scope = scope_of(run_root);
  for (auto& n : all_networks())
    if (n.run_root == scope && n.state == "ready") out.push_back(std::move(n));
  std::sort(out.begin(), out.end(), [](const UserNetwork& a, const UserNetwork& b) {
    return a.created_ms != b.created_ms ? a.created_ms < b.created_ms : a.name < b.name;
  });
  return out;
}

UserNetwork find_user_network(const std::string& run_root, const std::string& ref) {
  if (ref.empty()) throw Error(ErrorKind::InvalidArgument, "no network given");
  std::vector<UserNetwork> mine = list_user_networks(run_root);
  for (const auto& n : mine)
    if (n.name == ref || n.id == ref) return n;
  std::vector<const UserNetwork*> hits;
  if (ref.find_first_not_of("0123456789abcdef") == std::string::npos)
    for (const auto& n : mine)
      if (n.id.rfind(ref, 0) == 0) hits.push_back(&n);
  if (hits.size() == 1) return *hits[0];
  if (hits.size() > 1)
    throw Error(ErrorKind::InvalidArgument, "network id prefix '" + ref + "' is ambiguous: give more of the id or the name");
  throw Error(ErrorKind::NotFound, "no such network: " + ref + " (see 'sbx network ls')", ENOENT);
}

std::vector<NetworkEndpoint> network_endpoints(const UserNetwork& net) noexcept {
  std::vector<NetworkEndpoint> out;
  try {
    std::vector<std::string> holders;
    if (DIR* d = ::opendir((net_dir(net.id) + "/addr").c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        try {
          holders.push_back(fs::read_file(net_dir(net.id) + "/addr/" + e->d_name));
        } catch (const std::exception&) {
        }
      }
      ::closedir(d);
    }
    for (const auto& sid : holders) {
      std::string path = sandbox_network_index(sid) + "/" + net.id + ".json";
      NetworkEndpoint e;
      try {
        e = read_endpoint(path);
      } catch (const std::exception&) {
        continue;  // being made or released
      }
      if (!endpoint_in_use(e)) {
        std::vector<NetworkEndpoint> v{e};
        release_endpoints(v, false);
        continue;
      }
      out.push_back(std::move(e));
    }
  } catch (const std::exception&) {
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  return out;
}

void remove_user_network(const std::string& run_root, const std::string& ref) {
  if (is_reserved_network_name(ref))
    throw Error(ErrorKind::Forbidden, ref + " is a network mode of sbx's own and cannot be removed");
  UserNetwork n = find_user_network(run_root, ref);
  auto eps = network_endpoints(n);
  if (!eps.empty()) {
    std::string who;
    for (const auto& e : eps) who += (who.empty() ? "" : ", ") + (e.names.empty() ? id12(e.sandbox_id) : e.names[0]);
    throw Error(ErrorKind::Conflict, "network " + n.name + " is in use by " + std::to_string(eps.size()) +
                                         " sandbox(es): " + who + "; remove them or 'sbx network disconnect' them first");
  }
  {
    fs::FileLock lock(network_lock_path());
    n.state = "removing";
    n.creator_pid = ::getpid();
    n.creator_start = process_start_time(n.creator_pid);
    write_network(n);
  }
  teardown_network(n);
}

std::vector<NetworkEndpoint> allocate_endpoints(const std::string& run_root, const std::string& sandbox_id,
                                                const spec::NetworkOptions& opts, const std::vector<std::string>& names,
                                                bool detached) {
  std::vector<NetworkEndpoint> eps;
  std::vector<UserNetwork> nets;
  for (const auto& a : opts.networks) {
    UserNetwork n = find_user_network(run_root, a.network);
    for (const auto& seen : nets)
      if (seen.id == n.id)
        throw Error(ErrorKind::InvalidArgument, "network " + n.name + " is given twice: a sandbox joins a network once");
    for (const auto& al : a.aliases) validate_dns_name(al, "--network-alias");
    nets.push_back(std::move(n));
  }
  if (!opts.publish.empty() && !nets.empty() && nets[0].internal)
    throw Error(ErrorKind::InvalidArgument, "-p publishes to the sandbox's first network, and " + nets[0].name +
                                        " is --internal: put a network with a way out first");
  bool have_route = false;
  try {
    for (size_t i = 0; i < nets.size(); ++i) {
      const UserNetwork& n = nets[i];
      const spec::NetworkAttachment& a = opts.networks[i];
      NetworkEndpoint e;
      e.sandbox_id = sandbox_id;
      e.run_root = scope_of(run_root);
      e.network_id = n.id;
      e.network_name = n.name;
      e.bridge = n.bridge;
      e.prefix_len = n.subnet.len;
      e.gateway = n.gateway;
      e.port = port_name(sandbox_id, n.id);
      e.ifname = "eth" + std::to_string(i);
      e.internal = n.internal;
      e.default_route = !n.internal && !have_route;
      have_route = have_route || e.default_route;
      e.detached = detached ? 1 : 0;
      e.creator_pid = ::getpid();
      e.creator_start = process_start_time(e.creator_pid);
      if (i == 0) e.publish = opts.publish;
      for (const auto& nm : names)
        if (!nm.empty() && std::find(e.names.begin(), e.names.end(), nm) == e.names.end()) e.names.push_back(nm);
      for (const auto& al : a.aliases)
        if (std::find(e.names.begin(), e.names.end(), al) == e.names.end()) e.names.push_back(al);
      e.path = sandbox_network_index(sandbox_id) + "/" + n.id + ".json";
      uint32_t want = 0;
      if (!a.ip.empty()) {
        try {
          want = parse_ipv4(a.ip, "--ip");
        } catch (const Error& err) {
          throw Error(ErrorKind::InvalidArgument, err.what());
        }
        if (!contains(n.subnet, want) || want == n.subnet.addr || want == last_addr(n.subnet))
          throw Error(ErrorKind::InvalidArgument, "invalid --ip " + a.ip + ": not a host address of network " + n.name + " (" +
                                              format_cidr(n.subnet) + ")");
        if (want == n.gateway)
          throw Error(ErrorKind::InvalidArgument, "invalid --ip " + a.ip + ": the gateway of network " + n.name);
        reclaim_address(n, want);
      }
      fs::FileLock lock(network_lock_path());
      // The sandbox's index dir is made under the lock, as its first record
      // is written: gc (under the same lock) takes an empty one for a dead
      // sandbox's, never for one being made.
      fs::mkdir_p(sandbox_network_index(sandbox_id), 0700);
      if (want) {
        take_fixed_address(n, want, sandbox_id);
        e.address = want;
      } else {
        e.address = take_address(n, sandbox_id);
      }
      e.mac = mac_for(e.address);
      try {
        write_endpoint(e);
      } catch (...) {
        ::unlink(addr_file(n.id, e.address).c_str());
        throw;
      }
      eps.push_back(std::move(e));
    }
  } catch (...) {
    release_endpoints(eps, true);
    ::rmdir(sandbox_network_index(sandbox_id).c_str());
    throw;
  }
  return eps;
}

void attach_endpoints(std::vector<NetworkEndpoint>& eps, int netns_fd) {
  RtNetlink host;
  RtNetlink inside = RtNetlink::in_netns(netns_fd);
  for (auto& e : eps) {
    uint8_t mac[6] = {0x02, 0x5b, static_cast<uint8_t>(e.address >> 24), static_cast<uint8_t>(e.address >> 16),
                      static_cast<uint8_t>(e.address >> 8), static_cast<uint8_t>(e.address)};
    e.attached = true;
    write_endpoint(e);
    host.add_veth(e.port, e.ifname, netns_fd, mac);
    write_sysctl_if_there("/proc/sys/net/ipv6/conf/" + e.port + "/disable_ipv6", "1");
    host.set_master(e.port, e.bridge);
    host.link_up(e.port);
    inside.add_address(e.ifname, {e.address, e.prefix_len});
    inside.link_up(e.ifname);
    if (e.default_route) inside.add_default_route(e.ifname, e.gateway);
    {
      fs::FileLock lock(network_lock_path());
      try {
        nft_apply(nft_table_probe(), "check sbx's nftables tables");
      } catch (const Error&) {
        throw Error("the nftables tables of sbx's networks are gone (a flushed ruleset?): network " + e.network_name +
                    " has no rules; remove and create it again");
      }
      try {
        nft_apply(nft_endpoint_script(e), "set up the port of sandbox " + id12(e.sandbox_id) + " on network " +
                                              e.network_name);
      } catch (const Error& err) {
        if (err.err() == EINVAL && std::string(err.what()).find("File exists") != std::string::npos && !e.publish.empty())
          throw Error(ErrorKind::Conflict, "cannot publish: a host port is already allocated to another sandbox "
                                           "('sbx ps'); pick another HOST_PORT",
                      EADDRINUSE);
        throw;
      }
    }
    fs::write_file_atomic(hosts_file(e), hosts_line(e), 0644);
  }
}

void release_endpoints(std::vector<NetworkEndpoint>& eps, bool namespace_gone) noexcept {
  for (auto& e : eps) {
    if (e.empty()) continue;
    try {
      ::unlink(hosts_file(e).c_str());
      fs::FileLock lock(network_lock_path());
      // Released already (rm beside the run that made it, gc): its address
      // and ports may be another sandbox's by now.
      try {
        NetworkEndpoint on_disk = read_endpoint(e.path);
        if (on_disk.sandbox_id != e.sandbox_id) continue;
        e.attached = e.attached || on_disk.attached;
      } catch (const std::exception&) {
        continue;
      }
      apply_each(nft_endpoint_release_commands(e), "remove the port of sandbox " + id12(e.sandbox_id));
      if (e.attached && !namespace_gone) {
        try {
          RtNetlink host;
          host.delete_link(e.port);
        } catch (const std::exception& err) {
          log::warn("release the endpoint of sandbox " + id12(e.sandbox_id) + " on " + e.network_name + ": " + err.what());
        }
      }
      std::string a = addr_file(e.network_id, e.address);
      try {
        if (fs::read_file(a) == e.sandbox_id) ::unlink(a.c_str());
      } catch (const std::exception&) {
      }
      ::unlink(e.path.c_str());
      ::rmdir(sandbox_network_index(e.sandbox_id).c_str());  // when nothing else of it is there
    } catch (const std::exception& err) {
      log::warn("release the endpoint of sandbox " + id12(e.sandbox_id) + ": " + err.what() + "; 'sbx gc' will retry");
    }
  }
}

std::vector<NetworkEndpoint> sandbox_endpoints(const std::string& sandbox_id) noexcept {
  std::vector<NetworkEndpoint> out;
  std::string dir = sandbox_network_index(sandbox_id);
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() != 69 || n.compare(64, 5, ".json") != 0) continue;
      try {
        out.push_back(read_endpoint(dir + "/" + n));
      } catch (const std::exception&) {
      }
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.ifname.size() != b.ifname.size() ? a.ifname.size() < b.ifname.size() : a.ifname < b.ifname;
  });
  return out;
}

std::string endpoints_resolv_conf(const std::vector<NetworkEndpoint>& eps, const std::vector<UserNetwork>& nets) {
  std::string out = "# written by sbx for its networks (each network's DNS server)\n";
  auto forwards_all = [&](const NetworkEndpoint& e) {
    for (const auto& n : nets)
      if (n.id == e.network_id) return !n.internal && n.allow_egress.empty();
    return false;
  };
  int count = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& e : eps)
      if (forwards_all(e) == (pass == 1) && count < 3) {
        out += "nameserver " + format_ipv4(e.gateway) + "\n";
        ++count;
      }
  return out;
}

NetworkEndpoint connect_endpoint(const std::string& run_root, const std::string& sandbox_id, int netns_fd,
                                 const spec::NetworkAttachment& a, const std::vector<std::string>& names,
                                 bool detached) {
  UserNetwork n = find_user_network(run_root, a.network);
  auto have = sandbox_endpoints(sandbox_id);
  for (const auto& e : have)
    if (e.network_id == n.id)
      throw Error(ErrorKind::Conflict, "sandbox " + id12(sandbox_id) + " is connected to network " + n.name + " already");
  int next = 0;
  for (const auto& e : have) next = std::max(next, std::atoi(e.ifname.c_str() + 3) + 1);
  spec::NetworkOptions o;
  o.networks = {a};
  auto eps = allocate_endpoints(run_root, sandbox_id, o, names, detached);
  eps[0].ifname = "eth" + std::to_string(next);
  eps[0].default_route = false;
  try {
    write_endpoint(eps[0]);
    attach_endpoints(eps, netns_fd);
  } catch (...) {
    release_endpoints(eps, false);
    throw;
  }
  return eps[0];
}

void disconnect_endpoint(const std::string& run_root, const std::string& sandbox_id, const std::string& ref) {
  UserNetwork n = find_user_network(run_root, ref);
  for (auto& e : sandbox_endpoints(sandbox_id)) {
    if (e.network_id != n.id) continue;
    std::vector<NetworkEndpoint> v{e};
    release_endpoints(v, false);
    return;
  }
  throw Error(ErrorKind::NotFound, "sandbox " + id12(sandbox_id) + " is not connected to network " + n.name, ENOENT);
}

/// Removes the temp files of atomic writes whose writer was killed
/// (NAME.tmp.PID.N) from `dir`. No throw.
void sweep_dir(const std::string& dir) noexcept {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      size_t t = n.find(".tmp.");
      if (t == std::string::npos) continue;
      pid_t pid = static_cast<pid_t>(std::atoi(n.c_str() + t + 5));
      if (pid > 0 && process_start_time(pid) == 0) ::unlinkat(::dirfd(d), e->d_name, 0);
    }
    ::closedir(d);
  }
}

std::vector<std::string> gc_user_networks() noexcept {
  std::vector<std::string> out;
  try {
    for (const auto& id : network_ids()) sweep_dir(net_dir(id));
    sweep_dir(networks_dir());
    // Endpoints of dead sandboxes.
    std::string index = network_state_dir() + "/sandboxes";
    if (DIR* d = ::opendir(index.c_str())) {
      std::vector<std::string> paths, subs;
      while (struct dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string sub = index + "/" + e->d_name;
        sweep_dir(sub);
        subs.push_back(sub);
        if (DIR* s = ::opendir(sub.c_str())) {
          while (struct dirent* f = ::readdir(s)) {
            std::string n = f->d_name;
            if (n.size() == 69 && n.compare(64, 5, ".json") == 0) paths.push_back(sub + "/" + n);
          }
          ::closedir(s);
        }
      }
      ::closedir(d);
      for (const auto& p : paths) {
        NetworkEndpoint e;
        try {
          e = read_endpoint(p);
        } catch (const std::exception&) {
          continue;
        }
        if (endpoint_in_use(e)) continue;
        std::vector<NetworkEndpoint> v{e};
        release_endpoints(v, false);
        out.push_back("endpoint " + e.port + " (" + format_ipv4(e.address) + " on " + e.network_name + ")");
      }
      // Index dirs left empty (a sandbox killed as its first endpoint was
      // made): every record is made under the lock with its dir, so an empty
      // one under the lock is nobody's. (rmdir takes empty ones only.)
      fs::FileLock lock(network_lock_path());
      for (const auto& sub : subs) ::rmdir(sub.c_str());
    }
    // Networks a killed sbx was making or removing, and those whose run root is gone.
    for (const auto& id : network_ids()) {
      UserNetwork n;
      try {
        n = read_network(id);
      } catch (const std::exception&) {
        struct stat st {};
        if (::stat(net_dir(id).c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime > 60) {
          UserNetwork torn;
          torn.id = id;
          torn.name = id12(id);
          torn.bridge = kBridgePrefix + id12(id);
          teardown_network(torn);
          out.push_back("network " + id12(id) + " (unreadable record)");
        }
        continue;
      }
      bool orphan = n.state != "ready" && !alive(n.creator_pid, n.creator_start);
      bool scope_gone = n.state == "ready" && !fs::exists(n.run_root) && network_endpoints(n).empty();
      if (!orphan && !scope_gone) continue;
      teardown_network(n);
      out.push_back("network " + n.name + " (" + n.bridge + ")");
    }
  } catch (const std::exception& e) {
    log::warn(std::string("gc of sbx's networks: ") + e.what());
  }
  return out;
}

bool any_user_network() noexcept { return !network_ids().empty(); }

std::vector<Ipv4Prefix> user_network_subnets() noexcept {
  std::vector<Ipv4Prefix> out;
  try {
    std::string text = fs::read_file(subnets_index());
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      if (line.empty()) continue;
      try {
        out.push_back(parse_cidr(line.substr(0, line.find(' ')), "subnet"));
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  return out;
}

std::string user_network_json(const UserNetwork& n, const std::vector<NetworkEndpoint>& eps,
                              const std::map<std::string, std::string>& names) {
  json containers = json::object();
  for (const auto& e : eps) {
    auto it = names.find(e.sandbox_id);
    containers[e.sandbox_id] = {{"Name", it != names.end() ? it->second : id12(e.sandbox_id)},
                                {"EndpointID", port_name(e.sandbox_id, n.id).substr(3) + id12(n.id)},
                                {"MacAddress", e.mac},
                                {"IPv4Address", format_ipv4(e.address) + "/" + std::to_string(e.prefix_len)},
                                {"IPv6Address", ""},
                                {"Aliases", e.names},
                                {"Interface", e.ifname}};
  }
  char created[64] = "";
  time_t secs = static_cast<time_t>(n.created_ms / 1000);
  struct tm tm {};
  if (::gmtime_r(&secs, &tm)) {
    size_t len = std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(created + len, sizeof created - len, ".%03dZ", static_cast<int>(n.created_ms % 1000));
  }
  json j = {{"Name", n.name},
            {"Id", n.id},
            {"Created", created},
            {"Scope", "local"},
            {"Driver", n.driver},
            {"EnableIPv6", false},
            {"IPAM",
             {{"Driver", "default"},
              {"Options", json::object()},
              {"Config", json::array({{{"Subnet", format_cidr(n.subnet)}, {"Gateway", format_ipv4(n.gateway)}}})}}},
            {"Internal", n.internal},
            {"Attachable", true},
            {"Ingress", false},
            {"ConfigFrom", {{"Network", ""}}},
            {"ConfigOnly", false},
            {"Containers", containers},
            {"Options", json::object()},
            {"Labels", n.labels},
            {"Bridge", n.bridge},
            {"AllowEgress", n.allow_egress},
            {"DenyEgress", n.deny_egress},
            {"DnsServers", n.dns},
            {"DnsServer", format_ipv4(n.gateway)},
            {"DnsLog", dns_log(n.id)}};
  if (n.dns_pid > 0) j["DnsPid"] = n.dns_pid;
  return j.dump();
}

}  // namespace sbx::runtime
