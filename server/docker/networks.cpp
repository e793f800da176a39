// The Docker Engine API's networks (/networks: list, inspect, create,
// connect, disconnect, remove, prune) over the engine's user-defined
// networks (engine/networks.cpp), and the NetworkSettings.Networks of a
// container's inspect. Shapes: the Engine API v1.41–1.44 reference (Network,
// NetworkCreateRequest, NetworkConnectRequest, EndpointSettings).
#include <set>

#include "common/error.h"
#include "runtime/linux/netlink.h"
#include "runtime/linux/user_network.h"
#include "server/docker/api.h"
#include "server/docker/docker_spec.h"

namespace sbx::server {

using nlohmann::json;

namespace {


std::string jstr(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

/// A field that must be absent, null, false or empty: sbx has no such thing.
void refuse_if_set(const json& body, const char* field, const std::string& why) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return;
  if ((it->is_boolean() && !it->get<bool>()) || (it->is_object() && it->empty()) ||
      (it->is_array() && it->empty()) || (it->is_string() && it->get<std::string>().empty()))
    return;
  throw HttpError{400, std::string(field) + " " + it->dump() + " is not supported by sbx serve: " + why};
}

}  // namespace

void Api::network_list(Connection& c, const Request& r) {
  auto filters = parse_filters(r.param("filters"));
  // Docker: the values of one key are alternatives, the keys all apply.
  std::optional<std::set<std::string>> keep;
  bool dangling_only = false, builtin_only = false;
  for (const auto& [key, vals] : filters) {
    if (key == "type") {
      for (const auto& v : vals) {
        if (v != "custom" && v != "builtin") throw HttpError{400, "invalid filter 'type=" + v + "': use custom or builtin"};
        builtin_only = builtin_only || (v == "builtin" && vals.size() == 1);
      }
      continue;
    }
    if (key == "dangling") {
      for (const auto& v : vals) dangling_only = dangling_only || v == "true" || v == "1";
      continue;
    }
    if (key != "name" && key != "id" && key != "label" && key != "driver")
      throw HttpError{400, "invalid filter '" + key + "' (sbx serve: name, id, label, driver, type, dangling)"};
    std::set<std::string> any;
    for (const auto& v : vals)
      for (const auto& i : engine_.list_networks({key + "=" + v})) any.insert(i.network.id);
    if (keep) {
      std::set<std::string> both;
      for (const auto& id : *keep)
        if (any.count(id)) both.insert(id);
      keep = both;
    } else {
      keep = any;
    }
  }
  json out = json::array();
  if (!builtin_only)  // sbx's networks are all user-defined ("custom")
    for (const auto& i : engine_.list_networks()) {
      if (keep && !keep->count(i.network.id)) continue;
      if (dangling_only && !i.endpoints.empty()) continue;
      out.push_back(json::parse(i.json()));
    }
  c.send(200, out.dump());
}

void Api::network_inspect(Connection& c, const Request&, const std::string& ref) {
  c.send(200, engine_.inspect_network(ref).json());
}

void Api::network_create(Connection& c, const Request& r) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  if (!body.is_object()) throw HttpError{400, "invalid network config: expected a JSON object"};
  runtime::NetworkCreateOptions o;
  o.name = jstr(body, "Name");
  if (o.name.empty()) throw HttpError{400, "network create: Name is required"};
  std::string driver = jstr(body, "Driver");
  if (!driver.empty() && driver != "bridge")
    throw HttpError{400, "network driver '" + driver + "' is not supported by sbx serve (bridge only)"};
  o.internal = body.value("Internal", false);
  refuse_if_set(body, "EnableIPv6", "sbx networks are IPv4 only");
  refuse_if_set(body, "Ingress", "sbx has no swarm");
  refuse_if_set(body, "ConfigOnly", "sbx has no config-only networks");
  refuse_if_set(body, "Options", "sbx's bridge driver takes no driver options");
  if (auto ipam = body.find("IPAM"); ipam != body.end() && ipam->is_object()) {
    std::string d = jstr(*ipam, "Driver");
    if (!d.empty() && d != "default")
      throw HttpError{400, "IPAM driver '" + d + "' is not supported by sbx serve (default only)"};
    refuse_if_set(*ipam, "Options", "sbx's IPAM takes no options");
    if (auto cfgs = ipam->find("Config"); cfgs != ipam->end() && cfgs->is_array() && !cfgs->empty()) {
      if (cfgs->size() > 1) throw HttpError{400, "IPAM Config: an sbx network has one subnet (got " +
                                                     std::to_string(cfgs->size()) + ")"};
      const json& ic = (*cfgs)[0];
      if (!ic.is_object()) throw HttpError{400, "IPAM Config: expected objects"};
      o.subnet = jstr(ic, "Subnet");
      o.gateway = jstr(ic, "Gateway");
      refuse_if_set(ic, "IPRange", "sbx hands out addresses from the whole subnet");
      refuse_if_set(ic, "AuxiliaryAddresses", "sbx reserves only the gateway");
      if (o.subnet.empty() && !o.gateway.empty()) throw HttpError{400, "IPAM Config: a Gateway needs its Subnet"};
    }
  }
  if (auto l = body.find("Labels"); l != body.end() && l->is_object())
    for (const auto& [k, v] : l->items())
      if (v.is_string()) o.labels[k] = v.get<std::string>();
  engine::NetworkInfo n = engine_.create_network(o);
  emit_object("network", "create", n.network.id, {{"name", n.network.name}, {"type", "bridge"}});
  c.send(201, json{{"Id", n.network.id}, {"Warning", ""}}.dump());
}

void Api::network_remove(Connection& c, const Request&, const std::string& ref) {
  engine::NetworkInfo n = engine_.inspect_network(ref);
  engine_.remove_network(n.network.id);
  emit_object("network", "destroy", n.network.id, {{"name", n.network.name}, {"type", "bridge"}});
  c.send(204, "");
}

void Api::network_prune(Connection& c, const Request& r) {
  std::vector<std::string> filters;
  for (const auto& [key, vals] : parse_filters(r.param("filters"))) {
    if (key != "label") throw HttpError{400, "invalid prune filter '" + key + "' (sbx serve: label)"};
    for (const auto& v : vals) filters.push_back("label=" + v);
  }
  std::map<std::string, std::string> ids;  // name → id, for the destroy events
  for (const auto& i : engine_.list_networks()) ids[i.network.name] = i.network.id;
  auto names = engine_.prune_networks(filters);
  for (const auto& n : names) emit_object("network", "destroy", ids.count(n) ? ids[n] : n, {{"name", n}, {"type", "bridge"}});
  c.send(200, json{{"NetworksDeleted", names}}.dump());
}

void Api::network_connect(Connection& c, const Request& r, const std::string& ref, bool connect) {
  json body = json::parse(r.body.empty() ? "{}" : r.body);
  if (!body.is_object()) throw HttpError{400, "invalid request: expected a JSON object"};
  std::string container = jstr(body, "Container");
  if (container.empty()) throw HttpError{400, "Container is required"};
  engine::NetworkInfo net = engine_.inspect_network(ref);  // 404 first, as docker
  const std::string& name = net.network.name;
  std::string id = resolve_container(container);
  auto ctr = record(id);
  NetworkAttachment a{name, {}, ""};
  json ep = json::object();
  if (connect) {
    if (auto e = body.find("EndpointConfig"); e != body.end() && e->is_object()) {
      ep = *e;
      a.aliases = string_list(ep.value("Aliases", json()));
      if (auto ipam = ep.find("IPAMConfig"); ipam != ep.end() && ipam->is_object()) a.ip = jstr(*ipam, "IPv4Address");
    }
  }
  // A container whose sandbox is not made yet: its config changes, its start
  // joins the network (Docker's created containers too).
  bool pending = false;
  if (ctr) {
    std::lock_guard lk(mu_);
    // (one that ended too: its next start makes its sandbox again, as docker
    // attaches a stopped container at its next start)
    pending = !ctr->sandbox || ctr->ended;
  }
  if (pending) {
    json cfg;
    {
      std::lock_guard lk(mu_);
      cfg = ctr->config;
    }
    json& hc = cfg["HostConfig"];
    if (!hc.is_object()) hc = json::object();
    json& eps = cfg["NetworkingConfig"]["EndpointsConfig"];
    if (!eps.is_object()) eps = json::object();
    std::string mode = hc.value("NetworkMode", "");
    bool on = eps.contains(name) || eps.contains(net.network.id) || mode == name || mode == net.network.id;
    if (connect) {
      if (on) throw HttpError{409, "container " + id.substr(0, 12) + " is already connected to network " + name};
      if (mode == "host") throw HttpError{400, "container " + id.substr(0, 12) + " uses the host's network: it cannot join network " + name};
      eps[name] = ep;
    } else {
      if (!on) throw HttpError{404, "container " + id.substr(0, 12) + " is not connected to network " + name};
      eps.erase(name);
      eps.erase(net.network.id);
      if (mode == name || mode == net.network.id) hc["NetworkMode"] = eps.empty() ? "none" : eps.begin().key();
    }
    try {  // checked as create checks it
      (void)engine::build_sandbox(options_from_docker(cfg, id, ctr->name),
                                  engine::ResolvedImage{cfg.value("Image", ""), ctr->image.id, ctr->image.config, {}},
                                  default_runtime_);
    } catch (const Error& e) {
      throw HttpError{400, e.what()};
    }
    {
      std::lock_guard lk(mu_);
      ctr->config = cfg;
    }
    emit_object("network", connect ? "connect" : "disconnect", net.network.id,
                {{"name", name}, {"type", "bridge"}, {"container", id}});
    return (void)c.send(200, "");
  }
  if (connect) {
    engine_.connect_network(name, id, a);
  } else {
    engine_.disconnect_network(name, id);
  }
  if (ctr) {  // a restart keeps what was joined or left
    std::lock_guard lk(mu_);
    json& eps = ctr->config["NetworkingConfig"]["EndpointsConfig"];
    if (!eps.is_object()) eps = json::object();
    if (connect) {
      eps[name] = ep;
    } else {
      eps.erase(name);
      eps.erase(net.network.id);
      json& hc = ctr->config["HostConfig"];
      if (hc.is_object() && (hc.value("NetworkMode", "") == name || hc.value("NetworkMode", "") == net.network.id))
        hc["NetworkMode"] = eps.empty() ? "none" : eps.begin().key();
    }
  }
  emit_object("network", connect ? "connect" : "disconnect", net.network.id,
              {{"name", name}, {"type", "bridge"}, {"container", id}});
  c.send(200, "");
}

json Api::container_networks(const std::string& id, const json& cfg) {
  json out = json::object();
  const std::string short_id = id.substr(0, 12);
  json eps = json::object();
  if (auto nc = cfg.find("NetworkingConfig"); nc != cfg.end() && nc->is_object())
    if (auto e = nc->find("EndpointsConfig"); e != nc->end() && e->is_object()) eps = *e;
  auto asked = [&eps](const std::string& name, const std::string& net_id) {
    for (const auto& key : {name, net_id})
      if (auto it = eps.find(key); it != eps.end() && it->is_object()) return *it;
    return json::object();
  };
  // Aliases as docker reports them: those asked for, and the short id.
  auto aliases = [&short_id](const json& ep) {
    json a = json::array();
    for (const auto& s : string_list(ep.value("Aliases", json())))
      if (s != short_id) a.push_back(s);
    a.push_back(short_id);
    return a;
  };
  // A stopped container's sandbox keeps its old endpoints until its next
  // start, which joins the networks its config names now (connect and
  // disconnect of a stopped container change only the config).
  bool ended = false;
  if (auto ctr = record(id)) {
    std::lock_guard lk(mu_);
    ended = ctr->ended;
  }
  auto live = ended ? decltype(runtime::sandbox_endpoints(id)){} : runtime::sandbox_endpoints(id);
  if (!live.empty()) {
    for (const auto& e : live) {
      json ep = asked(e.network_name, e.network_id);
      out[e.network_name] = {{"IPAMConfig", ep.value("IPAMConfig", json())},
                             {"Links", nullptr},
                             {"Aliases", aliases(ep)},
                             {"NetworkID", e.network_id},
                             {"EndpointID", runtime::port_name(id, e.network_id).substr(3) + e.network_id.substr(0, 12)},
                             {"Gateway", runtime::format_ipv4(e.gateway)},
                             {"IPAddress", runtime::format_ipv4(e.address)},
                             {"IPPrefixLen", e.prefix_len},
                             {"IPv6Gateway", ""},
                             {"GlobalIPv6Address", ""},
                             {"GlobalIPv6PrefixLen", 0},
                             {"MacAddress", e.mac},
                             {"DriverOpts", nullptr},
                             {"DNSNames", e.names}};
    }
    return out;
  }
  // Not running: the networks it will join, as asked.
  std::vector<std::string> names;
  std::string mode = cfg.contains("HostConfig") && cfg["HostConfig"].is_object()
                         ? cfg["HostConfig"].value("NetworkMode", "")
                         : "";
  if (!mode.empty() && mode != "default" && !runtime::is_reserved_network_name(mode)) names.push_back(mode);
  for (const auto& [k, v] : eps.items())
    if (k != mode && k != "default" && !runtime::is_reserved_network_name(k)) names.push_back(k);
  for (const auto& n : names) {
    std::string net_id, net_name = n;
    try {
      auto i = engine_.inspect_network(n);
      net_id = i.network.id;
      net_name = i.network.name;
    } catch (const Error&) {
    }
    json ep = asked(n, net_id);
    out[net_name] = {{"IPAMConfig", ep.value("IPAMConfig", json())},
                     {"Links", nullptr},
                     {"Aliases", aliases(ep)},
                     {"NetworkID", net_id},
                     {"EndpointID", ""},
                     {"Gateway", ""},
                     {"IPAddress", ""},
                     {"IPPrefixLen", 0},
                     {"IPv6Gateway", ""},
                     {"GlobalIPv6Address", ""},
                     {"GlobalIPv6PrefixLen", 0},
                     {"MacAddress", ""},
                     {"DriverOpts", nullptr},
                     {"DNSNames", nullptr}};
  }
  return out;
}

}  // namespace sbx::server
