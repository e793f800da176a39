#include "spec/spec_json.h"

#include "common/error.h"

namespace sbx::spec {

using nlohmann::json;

namespace {

json mount_json(const Mount& m) {
  return {{"destination", m.destination}, {"type", m.type}, {"source", m.source}, {"options", m.options}};
}
Mount mount_from(const json& j) {
  return {j.at("destination").get<std::string>(), j.at("type").get<std::string>(), j.at("source").get<std::string>(),
          j.at("options").get<std::vector<std::string>>()};
}

json device_json(const DeviceNode& d) {
  return {{"path", d.path},   {"type", std::string(1, d.type)}, {"major", d.major},
          {"minor", d.minor}, {"file_mode", d.file_mode},       {"uid", d.uid},
          {"gid", d.gid},     {"host_path", d.host_path}};
}
DeviceNode device_from(const json& j) {
  DeviceNode d;
  d.path = j.at("path").get<std::string>();
  d.type = j.at("type").get<std::string>().at(0);
  d.major = j.at("major").get<int64_t>();
  d.minor = j.at("minor").get<int64_t>();
  d.file_mode = j.at("file_mode").get<uint32_t>();
  d.uid = j.at("uid").get<uint32_t>();
  d.gid = j.at("gid").get<uint32_t>();
  d.host_path = j.at("host_path").get<std::string>();
  return d;
}

json rule_json(const DeviceRule& r) {
  return {{"allow", r.allow}, {"type", std::string(1, r.type)}, {"major", r.major}, {"minor", r.minor}, {"access", r.access}};
}
DeviceRule rule_from(const json& j) {
  DeviceRule r;
  r.allow = j.at("allow").get<bool>();
  r.type = j.at("type").get<std::string>().at(0);
  r.major = j.at("major").get<int64_t>();
  r.minor = j.at("minor").get<int64_t>();
  r.access = j.at("access").get<std::string>();
  return r;
}

json id_maps_json(const std::vector<IdMapping>& maps) {
  json a = json::array();
  for (const auto& m : maps) a.push_back({m.container_id, m.host_id, m.size});
  return a;
}
std::vector<IdMapping> id_maps_from(const json& j) {
  std::vector<IdMapping> out;
  for (const auto& m : j) out.push_back({m.at(0).get<uint32_t>(), m.at(1).get<uint32_t>(), m.at(2).get<uint32_t>()});
  return out;
}

json hook_json(const Hook& h) {
  json j = {{"path", h.path}, {"args", h.args}, {"env", h.env}, {"timeout_s", nullptr}};
  if (h.timeout_s) j["timeout_s"] = *h.timeout_s;
  return j;
}
Hook hook_from(const json& j) {
  Hook h;
  h.path = j.at("path").get<std::string>();
  h.args = j.at("args").get<std::vector<std::string>>();
  h.env = j.at("env").get<std::vector<std::string>>();
  if (!j.at("timeout_s").is_null()) h.timeout_s = j.at("timeout_s").get<int>();
  return h;
}

template <typename T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <typename T>
std::optional<T> optional_from(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}

template <typename T, typename F>
json list_json(const std::vector<T>& v, F f) {
  json a = json::array();
  for (const auto& x : v) a.push_back(f(x));
  return a;
}
template <typename T, typename F>
std::vector<T> list_from(const json& j, F f) {
  std::vector<T> out;
  for (const auto& x : j) out.push_back(f(x));
  return out;
}

int network_code(NetworkMode m) {
  return m == NetworkMode::Host ? 1 : m == NetworkMode::Private ? 2 : m == NetworkMode::User ? 3 : 0;
}
NetworkMode network_from(int c) {
  if (c < 0 || c > 3) throw Error("the spec's network mode " + std::to_string(c) + " is unknown");
  return c == 1 ? NetworkMode::Host : c == 2 ? NetworkMode::Private : c == 3 ? NetworkMode::User : NetworkMode::None;
}

/// Runs `f`, turning nlohmann's errors into sbx::Error for `what`.
template <typename F>
auto reading(const char* what, F f) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw Error(std::string("malformed ") + what + " from the parent sbx: " + e.what());
  }
}

}  // namespace

json process_to_json(const Process& p) {
  return {{"args", p.args},
          {"env", p.env},
          {"cwd", p.cwd},
          {"uid", p.uid},
          {"gid", p.gid},
          {"additional_gids", p.additional_gids},
          {"user", p.user},
          {"terminal", p.terminal},
          {"rlimits", list_json(p.rlimits, [](const Rlimit& r) { return json{r.type, r.soft, r.hard}; })},
          {"no_new_privileges", p.no_new_privileges},
          {"capabilities", p.capabilities}};
}

Process process_from_json(const json& j) {
  return reading("process", [&] {
    Process p;
    p.args = j.at("args").get<std::vector<std::string>>();
    p.env = j.at("env").get<std::vector<std::string>>();
    p.cwd = j.at("cwd").get<std::string>();
    p.uid = j.at("uid").get<uint32_t>();
    p.gid = j.at("gid").get<uint32_t>();
    p.additional_gids = j.at("additional_gids").get<std::vector<uint32_t>>();
    p.user = j.at("user").get<std::string>();
    p.terminal = j.at("terminal").get<bool>();
    p.rlimits = list_from<Rlimit>(j.at("rlimits"), [](const json& r) {
      return Rlimit{r.at(0).get<std::string>(), r.at(1).get<uint64_t>(), r.at(2).get<uint64_t>()};
    });
    p.no_new_privileges = j.at("no_new_privileges").get<bool>();
    p.capabilities = j.at("capabilities").get<std::vector<std::string>>();
    return p;
  });
}

json spec_to_json(const SandboxSpec& s) {
  json net = {{"allow_egress", s.net.allow_egress},
              {"deny_egress", s.net.deny_egress},
              {"publish", list_json(s.net.publish,
                                    [](const PortMapping& p) {
                                      return json{p.host_ip, p.host_port, p.container_port, p.protocol};
                                    })},
              {"dns", s.net.dns},
              {"extra_hosts", s.net.extra_hosts},
              {"networks", list_json(s.net.networks,
                                     [](const NetworkAttachment& a) { return json{a.network, a.aliases, a.ip}; })}};
  json res = {{"memory_bytes", optional_json(s.resources.memory_bytes)},
              {"cpus", optional_json(s.resources.cpus)},
              {"pids_limit", optional_json(s.resources.pids_limit)},
              {"devices", list_json(s.resources.devices, rule_json)}};
  return {{"id", s.id},
          {"name", s.name},
          {"image_ref", s.image_ref},
          {"image_id", s.image_id},
          {"layer_dirs", s.layer_dirs},
          {"upper_dir", s.upper_dir},
          {"disk_bytes", s.disk_bytes},
          {"process", process_to_json(s.process)},
          {"hostname", s.hostname},
          {"readonly_rootfs", s.readonly_rootfs},
          {"mounts", list_json(s.mounts, mount_json)},
          {"devices", list_json(s.devices, device_json)},
          {"resources", res},
          {"network", network_code(s.network)},
          {"create_container_hooks", list_json(s.create_container_hooks, hook_json)},
          {"ldconfig_dirs", s.ldconfig_dirs},
          {"uid_mappings", id_maps_json(s.uid_mappings)},
          {"gid_mappings", id_maps_json(s.gid_mappings)},
          {"annotations", s.annotations},
          {"labels", s.labels},
          {"runtime", s.runtime},
          {"timeout_ms", s.timeout.count()},
          {"idle_timeout_ms", s.idle_timeout.count()},
          {"stdin_open", s.stdin_open},
          {"stdin_pty_master", s.stdin_pty_master},
          {"net", net}};
}

SandboxSpec spec_from_json(const json& j) {
  return reading("sandbox spec", [&] {
    SandboxSpec s;
    s.process = process_from_json(j.at("process"));
    s.id = j.at("id").get<std::string>();
    s.name = j.at("name").get<std::string>();
    s.image_ref = j.at("image_ref").get<std::string>();
    s.image_id = j.at("image_id").get<std::string>();
    s.layer_dirs = j.at("layer_dirs").get<std::vector<std::string>>();
    s.upper_dir = j.at("upper_dir").get<std::string>();
    s.disk_bytes = j.at("disk_bytes").get<uint64_t>();
    s.hostname = j.at("hostname").get<std::string>();
    s.readonly_rootfs = j.at("readonly_rootfs").get<bool>();
    s.mounts = list_from<Mount>(j.at("mounts"), mount_from);
    s.devices = list_from<DeviceNode>(j.at("devices"), device_from);
    const json& res = j.at("resources");
    s.resources.memory_bytes = optional_from<int64_t>(res.at("memory_bytes"));
    s.resources.cpus = optional_from<double>(res.at("cpus"));
    s.resources.pids_limit = optional_from<int64_t>(res.at("pids_limit"));
    s.resources.devices = list_from<DeviceRule>(res.at("devices"), rule_from);
    s.network = network_from(j.at("network").get<int>());
    s.create_container_hooks = list_from<Hook>(j.at("create_container_hooks"), hook_from);
    s.ldconfig_dirs = j.at("ldconfig_dirs").get<std::vector<std::string>>();
    s.uid_mappings = id_maps_from(j.at("uid_mappings"));
    s.gid_mappings = id_maps_from(j.at("gid_mappings"));
    s.annotations = j.at("annotations").get<std::map<std::string, std::string>>();
    s.labels = j.at("labels").get<std::map<std::string, std::string>>();
    s.runtime = j.at("runtime").get<std::string>();
    s.timeout = std::chrono::milliseconds(j.at("timeout_ms").get<int64_t>());
    s.idle_timeout = std::chrono::milliseconds(j.at("idle_timeout_ms").get<int64_t>());
    s.stdin_open = j.at("stdin_open").get<bool>();
    s.stdin_pty_master = j.at("stdin_pty_master").get<bool>();
    const json& net = j.at("net");
    s.net.allow_egress = net.at("allow_egress").get<std::vector<std::string>>();
    s.net.deny_egress = net.at("deny_egress").get<std::vector<std::string>>();
    s.net.publish = list_from<PortMapping>(net.at("publish"), [](const json& p) {
      return PortMapping{p.at(0).get<std::string>(), p.at(1).get<uint16_t>(), p.at(2).get<uint16_t>(),
                         p.at(3).get<std::string>()};
    });
    s.net.dns = net.at("dns").get<std::vector<std::string>>();
    s.net.extra_hosts = net.at("extra_hosts").get<std::vector<std::pair<std::string, std::string>>>();
    s.net.networks = list_from<NetworkAttachment>(net.at("networks"), [](const json& a) {
      return NetworkAttachment{a.at(0).get<std::string>(), a.at(1).get<std::vector<std::string>>(),
                               a.at(2).get<std::string>()};
    });
    return s;
  });
}

}  // namespace sbx::spec
