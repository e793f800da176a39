#include "runtime/linux/network_options.h"

#include <cctype>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/dns_proxy.h"
#include "runtime/linux/netlink.h"

namespace sbx::runtime {

bool is_ipv4_cidr(const std::string& s) {
  try {
    parse_cidr(s, "x");
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool has_egress_rules(const spec::NetworkOptions& o) { return !o.allow_egress.empty() || !o.deny_egress.empty(); }

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
    if (is_ipv4_cidr(a) || is_domain_pattern(a)) continue;
    throw Error(ErrorKind::InvalidArgument, "invalid --allow-egress '" + a +
                "': expected an IPv4 address or CIDR (198.51.100.0/24), a domain (example.com) or *.DOMAIN");
  }
  for (const auto& d : o.deny_egress) parse_cidr(d, "--deny-egress");
  for (const auto& d : o.dns) parse_ipv4(d, "--dns");
  for (const auto& [name, ip] : o.extra_hosts) {
    if (name.empty() || name.find_first_of(" \t\n#") != std::string::npos)
      throw Error(ErrorKind::InvalidArgument, "invalid --add-host '" + name + ":" + ip + "': expected NAME:IP");
    parse_ipv4(ip, "--add-host address");
  }
  for (size_t i = 0; i < o.publish.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (o.publish[i].host_port == o.publish[j].host_port && o.publish[i].protocol == o.publish[j].protocol &&
          (o.publish[i].host_ip == o.publish[j].host_ip || o.publish[i].host_ip.empty() || o.publish[j].host_ip.empty()))
        throw Error(ErrorKind::InvalidArgument, "invalid --publish: host port " + std::to_string(o.publish[i].host_port) + "/" +
                    o.publish[i].protocol + " is given twice");
}

std::vector<std::string> allowed_domains(const spec::NetworkOptions& o) {
  std::vector<std::string> out;
  for (auto a : o.allow_egress) {
    if (is_ipv4_cidr(a) || !is_domain_pattern(a)) continue;
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
      if (!is_ipv4_cidr(ip) || (parse_ipv4(ip, "nameserver") >> 24) == 127) continue;
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

}  // namespace sbx::runtime
