// Engine: user-defined networks — create, list, inspect, remove, prune,
// connect and disconnect (runtime/linux/user_network.h does the kernel,
// nftables and DNS work). The CLI (cli/cmd_network.cpp) and the Docker API's
// /networks sit on these calls as they are.
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/network_choice.h"
#include "runtime/backends.h"
#include "runtime/linux/sandbox_network.h"
#include "runtime/state.h"

namespace sbx::engine {

void apply_network_choice(SandboxSpec& spec, const std::string& network, const std::vector<std::string>& aliases,
                          const std::string& ip) {
  std::vector<std::string> nets;
  for (size_t start = 0;;) {
    size_t c = network.find(',', start);
    std::string n = network.substr(start, c == std::string::npos ? std::string::npos : c - start);
    if (!n.empty()) nets.push_back(n);
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (nets.empty())
    throw Error(ErrorKind::InvalidArgument, "invalid --network '': use none, host, private or the name of a network");
  const std::string& mode = nets[0];
  spec.net.networks.clear();
  if (nets.size() == 1 && mode == "none") {
    spec.network = NetworkMode::None;
  } else if (nets.size() == 1 && mode == "host") {
    spec.network = NetworkMode::Host;
  } else if (nets.size() == 1 && (mode == "private" || mode == "bridge")) {
    spec.network = NetworkMode::Private;
  } else {
    for (const auto& n : nets)
      if (runtime::is_reserved_network_name(n))
        throw Error(ErrorKind::InvalidArgument, "invalid --network '" + network + "': " + n +
                                            " is a mode of its own (none, host, private), not a network to join "
                                            "beside others");
    spec.network = NetworkMode::User;
    for (const auto& n : nets) spec.net.networks.push_back({n, {}, ""});
    spec.net.networks[0].aliases = aliases;
    spec.net.networks[0].ip = ip;
  }
  if (spec.network != NetworkMode::User && (!aliases.empty() || !ip.empty()))
    throw Error(ErrorKind::InvalidArgument,
                "--network-alias and --ip need a user-defined network (--network NAME; see 'sbx network create')");
}

namespace {

/// label=KEY[=VALUE], name=SUBSTRING, id=PREFIX, driver=NAME.
bool matches(const runtime::UserNetwork& n, const std::vector<std::string>& filters) {
  for (const auto& f : filters) {
    size_t eq = f.find('=');
    if (eq == std::string::npos)
      throw Error(ErrorKind::InvalidArgument, "invalid network filter '" + f + "': use name=, id=, label= or driver=");
    std::string key = f.substr(0, eq), value = f.substr(eq + 1);
    if (key == "name") {
      if (n.name.find(value) == std::string::npos) return false;
    } else if (key == "id") {
      if (n.id.rfind(value, 0) != 0) return false;
    } else if (key == "driver") {
      if (n.driver != value) return false;
    } else if (key == "label") {
      size_t e2 = value.find('=');
      auto it = n.labels.find(value.substr(0, e2));
      if (it == n.labels.end()) return false;
      if (e2 != std::string::npos && it->second != value.substr(e2 + 1)) return false;
    } else {
      throw Error(ErrorKind::InvalidArgument, "invalid network filter '" + f + "': use name=, id=, label= or driver=");
    }
  }
  return true;
}

}  // namespace

std::string NetworkInfo::json() const { return runtime::user_network_json(network, endpoints, sandbox_names); }

NetworkInfo Engine::create_network(const runtime::NetworkCreateOptions& req) {
  NetworkInfo info;
  info.network = runtime::create_user_network(cfg_.run_root, req);
  return info;
}

std::vector<NetworkInfo> Engine::list_networks(const std::vector<std::string>& filters) {
  std::vector<NetworkInfo> out;
  for (auto& n : runtime::list_user_networks(cfg_.run_root)) {
    if (!matches(n, filters)) continue;
    NetworkInfo i;
    i.endpoints = runtime::network_endpoints(n);
    for (const auto& e : i.endpoints) {
      try {
        i.sandbox_names[e.sandbox_id] = runtime::read_state(runtime::sandbox_dir(e.run_root, e.sandbox_id)).name;
      } catch (const Error&) {
        i.sandbox_names[e.sandbox_id] = "";
      }
    }
    i.network = std::move(n);
    out.push_back(std::move(i));
  }
  return out;
}

NetworkInfo Engine::inspect_network(const std::string& ref) {
  runtime::UserNetwork n = runtime::find_user_network(cfg_.run_root, ref);
  for (auto& i : list_networks())
    if (i.network.id == n.id) return i;
  throw Error(ErrorKind::NotFound, "no such network: " + ref, ENOENT);
}

void Engine::remove_network(const std::string& ref) { runtime::remove_user_network(cfg_.run_root, ref); }

std::vector<std::string> Engine::prune_networks(const std::vector<std::string>& filters) {
  std::vector<std::string> removed;
  for (const auto& i : list_networks(filters)) {
    if (!i.endpoints.empty()) continue;
    try {
      runtime::remove_user_network(cfg_.run_root, i.network.id);
      removed.push_back(i.network.name);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Conflict && e.kind() != ErrorKind::NotFound) throw;  // joined or removed meanwhile
    }
  }
  return removed;
}

void Engine::connect_network(const std::string& network, const std::string& sandbox, const NetworkAttachment& opts) {
  runtime::UserNetwork n = runtime::find_user_network(cfg_.run_root, network);  // NotFound first, as docker
  const std::string id = resolve(sandbox);
  runtime::SandboxState st = runtime::read_state(runtime::sandbox_dir(cfg_.run_root, id));
  if (auto b = runtime::backend_of(st, backend_options()); b && !b->supports(runtime::Operation::NetworkConnect))
    throw Error(ErrorKind::Conflict, "cannot connect sandbox " + id.substr(0, 12) + " to network " + n.name + ": " +
                                         b->refusal(runtime::Operation::NetworkConnect));
  if (st.creator_pid == 0)
    throw Error(ErrorKind::Conflict, "cannot connect sandbox " + id.substr(0, 12) +
                                         ": only sandboxes made by 'sbx create' or 'sbx serve' can be connected");
  if (runtime::sandbox_endpoints(id).empty())
    throw Error(ErrorKind::Conflict, "cannot connect sandbox " + id.substr(0, 12) + " to network " + n.name +
                                         ": it is not on a user-defined network (it has --network none, host or "
                                         "private); start it with --network NAME");
  if (!runtime::state_alive(st) || st.status != "running")
    throw Error(ErrorKind::Conflict, "cannot connect sandbox " + id.substr(0, 12) + ": it is not running");
  int ns = ::open(("/proc/" + std::to_string(st.pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) throw_errno("open the network namespace of sandbox " + id.substr(0, 12));
  // (The init could have ended and its pid been reused between the checks.)
  if (!runtime::state_alive(st)) {
    ::close(ns);
    throw Error(ErrorKind::Conflict, "cannot connect sandbox " + id.substr(0, 12) + ": it is not running");
  }
  std::vector<std::string> names;
  if (!st.name.empty()) names.push_back(st.name);
  names.push_back(id.substr(0, 12));
  NetworkAttachment a = opts;
  a.network = n.id;
  try {
    runtime::connect_endpoint(cfg_.run_root, id, ns, a, names, true);
  } catch (...) {
    ::close(ns);
    throw;
  }
  ::close(ns);
}

void Engine::disconnect_network(const std::string& network, const std::string& sandbox) {
  runtime::UserNetwork n = runtime::find_user_network(cfg_.run_root, network);
  const std::string id = resolve(sandbox);
  try {
    runtime::SandboxState st = runtime::read_state(runtime::sandbox_dir(cfg_.run_root, id));
    auto b = runtime::backend_of(st, backend_options());
    if (b && !b->supports(runtime::Operation::NetworkConnect) && runtime::state_alive(st))
      throw Error(ErrorKind::Conflict, "cannot disconnect running sandbox " + id.substr(0, 12) + " (stop it first): " +
                                           b->refusal(runtime::Operation::NetworkConnect));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Conflict) throw;
  }
  runtime::disconnect_endpoint(cfg_.run_root, id, n.id);
}

}  // namespace sbx::engine
