#include "runtime/linux/sandbox_network.h"

#include <dirent.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
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

void write_sysctl(const std::string& path, const char* value) {
  if (fs::try_write_existing(path, value) != 0) throw_errno("write " + path);
}

/// The log of a sandbox's DNS proxy (its queries and the answers it dropped).
std::string dns_log_path(const std::string& id) { return sandbox_network_index(id) + "/dns.log"; }

/// Adds the sandbox's rules and ports to `inet sbxnet`, making the table
/// first when it is missing. Throws sbx::Error (EADDRINUSE: a published port
/// that another sandbox holds).
void apply_sandbox_rules(const NetworkLease& l, const spec::NetworkOptions& o) {
  fs::FileLock lock(network_lock_path());
  // The first lease (ours only): the table is made afresh. Otherwise it
  // must be there (a flushed ruleset would leave the sandbox unfiltered).
  // (Also when other leases exist but the table does not: an sbx killed
  // between its lease and its rules, or a flushed ruleset. No sandbox has
  // rules in a missing table, so making it afresh loses nothing.)
  std::string script;
  bool make_table = lease_files().size() <= 1 && !any_user_network();
  if (!make_table) {
    try {
      nft_apply(nft_table_probe(), std::string("check the nftables table ") + kNftTable);
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
      throw Error(ErrorKind::Conflict,
                  "cannot publish " + ports + ": the host port is already allocated to another sandbox ('sbx ps'); "
                  "pick another HOST_PORT",
                  EADDRINUSE);
    }
    throw;
  }
}

}  // namespace

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
      throw Error(ErrorKind::Conflict,
                  "cannot publish " + (p.host_ip.empty() ? "" : p.host_ip + ":") + std::to_string(p.host_port) + "/" +
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
  // A published port that a dead sandbox still holds (its sbx was killed, or
  // it was removed by a process that could not release it): reclaimed once,
  // then the setup is tried again.
  for (int attempt = 0;; ++attempt) {
    try {
      apply_sandbox_rules(l, o);
      break;
    } catch (const Error& e) {
      if (attempt > 0 || e.err() != EADDRINUSE) throw;
      if (gc_networks().empty()) throw;
    }
  }
  if (auto domains = allowed_domains(o); !domains.empty()) {
    // After the rules: dnsmasq adds to the allow set, which must exist.
    DnsServerConfig c;
    c.listen = l.gateway;
    c.domains = domains;
    c.upstreams = o.dns.empty() ? host_nameservers() : o.dns;
    c.nft_set = "a-" + id12(l.id);
    c.refused = refused_answer_ranges(network_pool());
    c.log_path = dns_log_path(l.id);
    DnsProxy p = start_dns_proxy(c, !detached);
    l.dns_pid = p.pid;
    l.dns_start = p.start_time;
    try {
      write_lease(l);
    } catch (...) {
      stop_dns_proxy(p);
      throw;
    }
  }
}

SandboxNetworks allocate_sandbox_networks(const std::string& run_root, const std::string& id, const SandboxSpec& spec,
                                          const std::string& hostname, bool detached) {
  SandboxNetworks n;
  if (spec.network == NetworkMode::Private) {
    n.lease = allocate_network(run_root, id, spec.net, detached);
  } else if (spec.network == NetworkMode::User) {
    std::vector<std::string> names;
    if (!spec.name.empty()) names.push_back(spec.name);
    names.push_back(hostname);
    names.push_back(id12(id));
    n.endpoints = allocate_endpoints(run_root, id, spec.net, names, detached);
    try {
      for (const auto& e : n.endpoints) n.networks.push_back(find_user_network(run_root, e.network_id));
    } catch (...) {
      release_endpoints(n.endpoints, true);
      throw;
    }
  }
  return n;
}

std::string sandbox_hosts(const SandboxNetworks& n, const std::string& hostname, const spec::NetworkOptions& o) {
  uint32_t address = !n.lease.empty() ? n.lease.address : n.endpoints.empty() ? 0 : n.endpoints[0].address;
  return hosts_for(hostname, address, o);
}

std::string sandbox_resolv(const SandboxNetworks& n, const spec::NetworkOptions& o) {
  if (!n.endpoints.empty()) return endpoints_resolv_conf(n.endpoints, n.networks);
  return resolv_conf_for(o, n.lease.gateway);
}

void attach_sandbox_networks(SandboxNetworks& n, int netns_fd, const spec::NetworkOptions& o, bool detached) {
  if (!n.lease.empty()) attach_network(n.lease, netns_fd, o, detached);
  if (!n.endpoints.empty()) attach_endpoints(n.endpoints, netns_fd);
}

void release_network(SandboxNetworks& n, bool namespace_gone) noexcept {
  if (!n.lease.empty()) release_network(std::exchange(n.lease, {}), namespace_gone);
  if (!n.endpoints.empty()) {
    release_endpoints(n.endpoints, namespace_gone);
    n.endpoints.clear();
  }
  n.networks.clear();
}

void release_network(const NetworkLease& l, bool namespace_gone) noexcept {
  if (l.empty()) return;
  try {
    stop_dns_proxy({l.dns_pid, l.dns_start});
    // One whose pid never reached the lease (sbx killed right after starting it).
    if (!l.allow_egress.empty()) kill_dns_proxies_for(dns_log_path(l.id));
    ::unlink(dns_log_path(l.id).c_str());
    fs::FileLock lock(network_lock_path());
    // Released already (`sbx rm` beside the `sbx run` that made it, or gc):
    // its slot and ports may be another sandbox's by now.
    try {
      if (read_lease(l.path).id != l.id) return;
    } catch (const std::exception&) {
      return;
    }
    if (!namespace_gone) {
      try {
        RtNetlink host;
        host.delete_link(l.veth);  // often gone with the sandbox's namespace already
      } catch (const std::exception& e) {
        log::warn("release the network of sandbox " + id12(l.id) + ": " + e.what());
      }
    }
    bool last = !any_user_network();
    for (const auto& f : lease_files()) last = last && f == l.path;
    if (last) {
      try {
        nft_apply(nft_table_delete_script(), "remove sbx's nftables tables");
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
    remove_lease_files(l);
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
        l = read_lease(f);
      } catch (const std::exception&) {
        struct stat st {};
        if (::stat(f.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime > 60) ::unlink(f.c_str());
        continue;
      }
      if (lease_in_use(l)) continue;
      release_network(l);
      out.push_back(l.veth + " (" + format_ipv4(l.address) + ")");
    }
    // Endpoints on user-defined networks, and networks, that nobody needs.
    for (auto& r : gc_user_networks()) out.push_back(std::move(r));
    // Index entries whose lease is gone (released by a process that left
    // them: an older sbx's gc, or one killed between the two unlinks).
    std::string index = dir + "/sandboxes";
    if (DIR* d = ::opendir(index.c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string sub = index + "/" + e->d_name;
        struct stat st {};
        if (::lstat((sub + "/private").c_str(), &st) == 0 && ::stat((sub + "/private").c_str(), &st) < 0 &&
            errno == ENOENT) {
          ::unlink((sub + "/private").c_str());
          ::unlink((sub + "/dns.log").c_str());
          ::rmdir(sub.c_str());  // only when nothing else of the sandbox is there
        }
      }
      ::closedir(d);
    }
  } catch (const std::exception& e) {
    log::warn(std::string("gc of sandbox networks: ") + e.what());
  }
  return out;
}

void release_sandbox_networks(const std::string& id) noexcept {
  if (NetworkLease l = find_lease(id); !l.empty()) release_network(l);
  if (auto eps = sandbox_endpoints(id); !eps.empty()) release_endpoints(eps, false);
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

std::optional<std::pair<uint64_t, uint64_t>> network_io_bytes(const std::string& id) noexcept {
  if (id.size() < 12) return std::nullopt;
  const std::string dir = "/sys/class/net/" + std::string(kPrivateVethPrefix) + id.substr(0, 12) + "/statistics/";
  try {
    uint64_t host_rx = std::stoull(fs::read_file(dir + "rx_bytes"));
    uint64_t host_tx = std::stoull(fs::read_file(dir + "tx_bytes"));
    return std::make_pair(host_tx, host_rx);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string network_settings_json(const std::string& id) noexcept {
  try {
    auto port_json = [](const std::vector<spec::PortMapping>& publish) {
      json ports = json::object();
      for (const auto& p : publish)
        ports[std::to_string(p.container_port) + "/" + p.protocol].push_back(
            {{"HostIp", p.host_ip.empty() ? "0.0.0.0" : p.host_ip}, {"HostPort", std::to_string(p.host_port)}});
      return ports;
    };
    NetworkLease l = find_lease(id);
    if (l.empty()) {
      auto eps = sandbox_endpoints(id);
      if (eps.empty()) return "null";
      json nets = json::object();
      for (const auto& e : eps)
        nets[e.network_name] = {{"NetworkID", e.network_id},
                                {"EndpointID", e.port.substr(3) + id12(e.network_id)},
                                {"IPAddress", format_ipv4(e.address)},
                                {"IPPrefixLen", e.prefix_len},
                                {"Gateway", format_ipv4(e.gateway)},
                                {"MacAddress", e.mac},
                                {"Aliases", e.names},
                                {"Interface", e.ifname},
                                {"Port", e.port}};
      const auto& first = eps[0];
      json j = {{"Mode", "user"},
                {"IPAddress", format_ipv4(first.address)},
                {"IPPrefixLen", first.prefix_len},
                {"Gateway", format_ipv4(first.gateway)},
                {"MacAddress", first.mac},
                {"Ports", port_json(first.publish)},
                {"Networks", nets}};
      return j.dump();
    }
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
              {"NftTable", kNftTable}};
    if (l.rules) j["NftChains"] = {"e-" + id12(l.id)};
    if (l.dns_pid > 0) {
      j["DnsProxyPid"] = l.dns_pid;
      j["DnsLog"] = dns_log_path(l.id);
    }
    return j.dump();
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
