#include "runtime/linux/network_lease.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/network_options.h"
#include "runtime/linux/network_rules.h"
#include "runtime/state.h"

namespace sbx::runtime {

namespace {

using json = nlohmann::json;

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
          {"allow_egress", l.allow_egress}, {"deny_egress", l.deny_egress}, {"rules", l.rules},
          {"detached", l.detached}};
}

}  // namespace

std::string network_state_dir() {
  const char* e = std::getenv("SBX_NETWORK_STATE");
  return e && *e ? e : "/run/sbx-net";
}

std::string network_lock_path() { return network_state_dir() + "/lock"; }

Ipv4Prefix network_pool() {
  const char* e = std::getenv("SBX_NETWORK_POOL");
  Ipv4Prefix p = parse_cidr(e && *e ? e : kDefaultNetworkPool, "SBX_NETWORK_POOL");
  if (p.len < 8 || p.len > 28)
    throw Error(ErrorKind::InvalidArgument,
                "invalid SBX_NETWORK_POOL '" + std::string(e) + "': use a prefix of /8 to /28, such as 10.213.0.0/16");
  return p;
}

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

NetworkLease read_lease(const std::string& path) {
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
  l.detached = j.value("detached", -1);
  return l;
}

bool lease_in_use(const NetworkLease& l) noexcept {
  bool dir = fs::exists(l.run_root + "/" + l.id);
  if (l.detached == 1) return dir;
  bool creator = l.creator_pid > 0 && process_start_time(l.creator_pid) == l.creator_start;
  if (l.detached == 0) return creator;
  return creator || dir;
}

std::string sandbox_network_index(const std::string& id) { return network_state_dir() + "/sandboxes/" + id; }

NetworkLease find_lease(const std::string& id) noexcept {
  try {
    char target[256];
    ssize_t n = ::readlink((sandbox_network_index(id) + "/private").c_str(), target, sizeof target - 1);
    if (n <= 0) return {};
    target[n] = 0;
    // Only a lease file of the state dir itself (no path of anyone else's).
    std::string name = target;
    if (name.rfind("../../", 0) != 0 || name.find('/', 6) != std::string::npos) return {};
    NetworkLease l = read_lease(network_state_dir() + "/" + name.substr(6));
    if (l.id != id) return {};
    return l;
  } catch (const std::exception&) {
    return {};
  }
}

void remove_lease_files(const NetworkLease& l) noexcept {
  if (l.empty()) return;
  ::unlink(l.path.c_str());
  std::string index = sandbox_network_index(l.id);
  ::unlink((index + "/private").c_str());
  ::rmdir(index.c_str());  // (not while other network state of the sandbox is there)
}

void write_lease(const NetworkLease& l) { fs::write_file_atomic(l.path, lease_json(l).dump(), 0600); }

NetworkLease allocate_network(const std::string& run_root, const std::string& id, const spec::NetworkOptions& o,
                              bool detached) {
  validate_network_options(o);
  Ipv4Prefix pool = network_pool();
  std::string dir = network_state_dir();
  fs::mkdir_p(dir, 0700);
  NetworkLease l;
  l.id = id;
  l.run_root = run_root;
  l.veth = kPrivateVethPrefix + id12(id);  // 15 chars: IFNAMSIZ - 1
  l.detached = detached ? 1 : 0;
  l.publish = o.publish;
  l.rules = has_egress_rules(o);
  l.allow_egress = o.allow_egress;
  l.deny_egress = o.deny_egress;
  l.creator_pid = ::getpid();
  l.creator_start = process_start_time(l.creator_pid);
  const uint32_t slots = 1u << (32 - pool.len - 2);  // one /30 each
  fs::FileLock lock(network_lock_path());
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
    write_lease(l);
    // The index (a link to the lease), for `sbx rm` of this sandbox.
    std::string index = sandbox_network_index(id);
    try {
      fs::mkdir_p(index, 0700);
      std::string link = index + "/private";
      ::unlink(link.c_str());
      if (::symlink(("../../" + std::to_string(slot) + ".json").c_str(), link.c_str()) < 0)
        throw_errno("create " + link);
    } catch (...) {
      remove_lease_files(l);
      throw;
    }
    return l;
  }
  throw Error("the network address pool " + format_cidr(pool) + " is exhausted (" + std::to_string(slots) +
                  " sandboxes): run 'sbx gc', or set SBX_NETWORK_POOL to a larger range",
              ENOSPC);
}

}  // namespace sbx::runtime
