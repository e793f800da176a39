// Docker container config → SandboxSpec (server/docker/docker_spec.h).
#include "server/docker/docker_spec.h"

#include <cstdint>
#include <sstream>

#include "common/error.h"
#include "common/json_number.h"
#include "runtime/linux/user_network.h"

namespace sbx::server {

using nlohmann::json;

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_string()) {
    out.push_back(j.get<std::string>());
  } else if (j.is_array()) {
    for (const auto& e : j)
      if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

namespace {

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

/// An integer field (Docker's int64 fields: Memory, NanoCpus, PidsLimit,
/// SizeBytes, Mode, Count); 0 when absent or not a number. A fraction, an
/// exponent or a value beyond int64 is refused, as Docker's own decoder
/// does: converting such a double to an integer is undefined behaviour.
int64_t num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  auto n = json_number::to_int64(*it);
  if (!n)
    throw Error(ErrorKind::InvalidArgument,
                std::string("invalid ") + key + ": " + it->dump() + " is not a 64-bit integer");
  return *n;
}

/// HostConfig.Mounts entry {"Type": "bind"|"volume"|"tmpfs", "Source",
/// "Target", "ReadOnly", "TmpfsOptions", "VolumeOptions"} as sbx's -v,
/// --mount or --tmpfs text.
void add_mount(const json& m, engine::SandboxOptions& o) {
  std::string type = str(m, "Type"), target = str(m, "Target");
  if (target.empty() || target[0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid HostConfig.Mounts entry: Target must be an absolute path");
  bool ro = m.value("ReadOnly", false);
  if (type == "bind") {
    o.volumes.push_back(str(m, "Source") + ":" + target + (ro ? ":ro" : ""));
    return;
  }
  if (type == "tmpfs") {
    std::string opts;
    auto add = [&opts](const std::string& x) { opts += (opts.empty() ? "" : ",") + x; };
    if (ro) add("ro");
    if (auto t = m.find("TmpfsOptions"); t != m.end() && t->is_object()) {
      if (int64_t size = num(*t, "SizeBytes"); size > 0) add("size=" + std::to_string(size));
      if (int64_t mode = num(*t, "Mode"); mode > 0) {
        std::ostringstream os;
        os << std::oct << mode;
        add("mode=" + os.str());
      }
    }
    o.tmpfs.push_back(target + (opts.empty() ? "" : ":" + opts));
    return;
  }
  if (type == "volume") {
    std::string src = str(m, "Source");  // empty: an anonymous volume (as docker's)
    bool nocopy = false;
    if (auto vo = m.find("VolumeOptions"); vo != m.end() && vo->is_object()) nocopy = vo->value("NoCopy", false);
    o.mounts.push_back("type=volume," + (src.empty() ? "" : "source=" + src + ",") + "target=" + target + (ro ? ",readonly" : "") +
                       (nocopy ? ",volume-nocopy" : ""));
    return;
  }
  throw Error(ErrorKind::Unsupported,
              "invalid mount type '" + type + "': sbx serve supports bind, volume and tmpfs");
}

[[noreturn]] void refuse(const std::string& field, const std::string& value, const std::string& why) {
  throw Error(ErrorKind::Unsupported, "HostConfig." + field + " " + value + " is not supported by sbx serve: " + why);
}

/// The security fields sbx cannot honour safely are refused, naming the
/// field, when they ask for something other than the default (the docker
/// CLI sends "Privileged": false, "PidMode": "" on every create); never
/// ignored (man sbx-serve has the table).
void check_security_fields(const json& hc) {
  if (auto p = hc.find("Privileged"); p != hc.end() && p->is_boolean() && p->get<bool>())
    refuse("Privileged", "true", "a sandbox never gets all capabilities and devices; name them with CapAdd/Devices");
  if (auto so = hc.find("SecurityOpt"); so != hc.end() && so->is_array()) {
    for (const auto& e : *so) {
      std::string v = e.is_string() ? e.get<std::string>() : e.dump();
      // sbx always sets no_new_privs: asking for it is honoured.
      if (v == "no-new-privileges" || v == "no-new-privileges=true" || v == "no-new-privileges:true") continue;
      refuse("SecurityOpt", "'" + v + "'",
             "sbx's seccomp filter and no_new_privs are always on and there is no AppArmor/SELinux profile to choose "
             "(only no-new-privileges is accepted)");
    }
  }
  if (auto sc = hc.find("Sysctls"); sc != hc.end() && sc->is_object() && !sc->empty())
    refuse("Sysctls", sc->dump(), "sbx sets no sysctls in a sandbox");
  auto mode = [&hc](const char* field, std::initializer_list<const char*> ok) {
    std::string v = str(hc, field);
    for (const char* k : ok)
      if (v == k) return;
    refuse(field, "'" + v + "'",
           "a sandbox always has namespaces of its own (leave it empty" + std::string(ok.size() > 1 ? " or private" : "") + ")");
  };
  mode("PidMode", {"", "private"});
  mode("IpcMode", {"", "private", "shareable"});
  mode("UTSMode", {""});
  if (std::string cg = str(hc, "CgroupParent"); !cg.empty())
    refuse("CgroupParent", "'" + cg + "'", "sbx places each sandbox in its own cgroup under sbx's");
}

}  // namespace

static engine::SandboxOptions options_from_docker_unchecked(const json& cfg, const std::string& id, const std::string& name) {
  const json empty = json::object();
  const json& hc = cfg.contains("HostConfig") && cfg["HostConfig"].is_object() ? cfg["HostConfig"] : empty;
  check_security_fields(hc);
  engine::SandboxOptions o;
  o.names.volume = "HostConfig.Binds";
  o.names.tmpfs = "HostConfig.Tmpfs";
  o.names.mount = "HostConfig.Mounts";
  o.names.network = "HostConfig.NetworkMode";
  o.names.cap_add = "HostConfig.CapAdd";
  o.names.cap_drop = "HostConfig.CapDrop";
  o.id = id;
  o.name = name;
  o.image = str(cfg, "Image");
  o.hostname = str(cfg, "Hostname");
  o.command = string_list(cfg.value("Cmd", json()));
  // Entrypoint: null/absent keeps the image's; [] or "" clears it (docker --entrypoint "").
  if (auto e = cfg.find("Entrypoint"); e != cfg.end() && !e->is_null()) o.entrypoint = string_list(*e);
  o.env = string_list(cfg.value("Env", json()));
  if (std::string w = str(cfg, "WorkingDir"); !w.empty()) o.workdir = w;
  if (std::string u = str(cfg, "User"); !u.empty()) o.user = u;
  if (auto l = cfg.find("Labels"); l != cfg.end() && l->is_object())
    for (const auto& [k, v] : l->items())
      if (v.is_string()) o.labels[k] = v.get<std::string>();

  std::string net = str(hc, "NetworkMode");
  bool user_net = false;
  if (net.empty() || net == "default" || net == "bridge" || net == "none") {
    o.network = "none";  // sbx has no bridge: loopback only
  } else if (net == "host") {
    o.network = "host";
  } else if (net.rfind("container:", 0) == 0) {
    throw Error(ErrorKind::Unsupported, "network mode '" + net +
                                            "' is not supported by sbx serve: a sandbox has a network namespace of "
                                            "its own (put both containers on one network instead)");
  } else {
    user_net = true;
    o.network = net;
  }
  // NetworkingConfig.EndpointsConfig {"NET": {"Aliases": […], "IPAMConfig":
  // {"IPv4Address": …}}}: the NetworkMode network first, then the others it names.
  if (auto nc = cfg.find("NetworkingConfig"); nc != cfg.end() && nc->is_object()) {
    if (auto ec = nc->find("EndpointsConfig"); ec != nc->end() && ec->is_object()) {
      for (const auto& [netname, ep] : ec->items()) {
        if (runtime::is_reserved_network_name(netname) || netname == "default") continue;
        if (net == "host" || net == "none")
          throw Error(ErrorKind::InvalidArgument, "NetworkingConfig.EndpointsConfig names network '" + netname +
                                                      "' but HostConfig.NetworkMode is '" + net +
                                                      "', which joins no other network");
        if (!user_net) {
          user_net = true;
          o.network = netname;
        } else if (netname != net && ("," + o.network + ",").find("," + netname + ",") == std::string::npos) {
          o.network += "," + netname;
        }
        NetworkAttachment a{netname, {}, ""};
        if (ep.is_object()) {
          a.aliases = string_list(ep.value("Aliases", json()));
          if (auto ipam = ep.find("IPAMConfig"); ipam != ep.end() && ipam->is_object()) {
            a.ip = str(*ipam, "IPv4Address");
            if (!str(*ipam, "IPv6Address").empty())
              throw Error(ErrorKind::Unsupported, "network " + netname + ": sbx networks have no IPv6 (IPAMConfig.IPv6Address)");
          }
        }
        if (!a.aliases.empty() || !a.ip.empty()) o.network_endpoints.push_back(a);
      }
    }
  }
  // PortBindings {"80/tcp": [{"HostIp": "", "HostPort": "8080"}]}: sbx's -p,
  // which needs a network of the sandbox's own (--network private): the
  // default/bridge mode with ports published is that, as docker's bridge.
  if (auto pb = hc.find("PortBindings"); pb != hc.end() && pb->is_object() && !pb->empty()) {
    if (net == "none" || net == "host")
      throw Error(ErrorKind::InvalidArgument, "port bindings need a network of the container's own: NetworkMode '" +
                                                  net + "' has none (leave it default or bridge)");
    for (const auto& [port, binds] : pb->items()) {
      std::string cport = port.substr(0, port.find('/'));
      std::string proto = port.find('/') == std::string::npos ? "tcp" : port.substr(port.find('/') + 1);
      if (!binds.is_array()) continue;
      for (const auto& b : binds) {
        std::string hip = b.is_object() ? str(b, "HostIp") : "", hport = b.is_object() ? str(b, "HostPort") : "";
        if (hport.empty())
          throw Error(ErrorKind::Unsupported, "port binding " + port + ": sbx needs a HostPort (no random host ports)");
        if (hip == "0.0.0.0" || hip == "::") hip.clear();
        o.publish.push_back((hip.empty() ? "" : hip + ":") + hport + ":" + cport + "/" + proto);
      }
    }
    if (!o.publish.empty() && !user_net) o.network = "private";
  }
  o.volumes = string_list(hc.value("Binds", json()));
  if (auto m = hc.find("Mounts"); m != hc.end() && m->is_array())
    for (const auto& e : *m) add_mount(e, o);
  if (auto t = hc.find("Tmpfs"); t != hc.end() && t->is_object())
    for (const auto& [path, opts] : t->items()) {
      std::string text = opts.is_string() ? opts.get<std::string>() : "";
      o.tmpfs.push_back(path + (text.empty() ? "" : ":" + text));
    }
  o.read_only = hc.value("ReadonlyRootfs", false);
  o.cap_drop = string_list(hc.value("CapDrop", json()));
  o.cap_add = string_list(hc.value("CapAdd", json()));
  o.allow_host_idmap = false;  // root in the container writing as host root: not offered over the API
  if (int64_t mem = num(hc, "Memory"); mem > 0) o.memory_bytes = mem;
  if (int64_t nano = num(hc, "NanoCpus"); nano > 0) o.cpus = static_cast<double>(nano) / 1e9;
  // PidsLimit: 0 or absent the default; -1 (any value below 0) unlimited.
  if (int64_t pids = num(hc, "PidsLimit"); pids != 0) o.pids_limit = pids;

  std::string rt = str(hc, "Runtime");
  if (auto l = o.labels.find("sbx.runtime"); l != o.labels.end() && (rt.empty() || rt == "runc")) rt = l->second;
  o.runtime = rt == "runc" ? "" : rt;
  o.userns = userns_mode_from_docker(cfg);
  if (auto g = gpus_from_docker(cfg)) {
    o.gpu.gpus = g->gpus;
    o.gpu.devices = g->devices;
  }
  return o;
}

engine::SandboxOptions options_from_docker(const json& cfg, const std::string& id, const std::string& name) {
  // A field of the wrong JSON type (a string where an object belongs…) is the
  // client's error: 400 with nlohmann's words, not a 500.
  try {
    return options_from_docker_unchecked(cfg, id, name);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::InvalidArgument, std::string("invalid container config: a field has the wrong JSON type (") + e.what() + ")");
  }
}

static std::optional<GpuAsk> gpus_from_docker_unchecked(const json& cfg) {
  const json empty = json::object();
  const json& hc = cfg.contains("HostConfig") && cfg["HostConfig"].is_object() ? cfg["HostConfig"] : empty;
  GpuAsk ask;
  if (auto dr = hc.find("DeviceRequests"); dr != hc.end() && dr->is_array()) {
    for (const auto& d : *dr) {
      if (!d.is_object()) continue;
      std::string driver = str(d, "Driver");
      if (!driver.empty() && driver != "nvidia" && driver != "cdi")
        throw Error(ErrorKind::Unsupported,
                    "device request driver '" + driver + "' is not supported by sbx serve (nvidia, cdi)");
      if (auto caps = d.find("Capabilities"); caps != d.end() && caps->is_array() && !caps->empty()) {
        bool gpu = false;
        for (const auto& set : *caps)
          for (const auto& c : string_list(set)) gpu = gpu || c == "gpu";
        if (!gpu) throw Error("device request without the 'gpu' capability: sbx serve passes GPUs only");
      }
      if (driver == "cdi") {  // DeviceIDs are CDI names (vendor/class=name)
        for (const auto& id : string_list(d.value("DeviceIDs", json()))) ask.devices.push_back(id);
        continue;
      }
      std::vector<std::string> ids = string_list(d.value("DeviceIDs", json()));
      int64_t count = num(d, "Count");
      if (!ids.empty()) {
        std::string list;
        for (const auto& i : ids) list += (list.empty() ? "" : ",") + i;
        ask.gpus = "device=" + list;
      } else if (count < 0) {
        ask.gpus = "all";
      } else if (count > 0) {
        ask.gpus = "count=" + std::to_string(count);
      }
    }
  }
  if (auto dv = hc.find("Devices"); dv != hc.end() && dv->is_array())
    for (const auto& d : *dv)
      if (d.is_object() && !str(d, "PathOnHost").empty()) {
        std::string in = str(d, "PathInContainer");
        if (!in.empty() && in != str(d, "PathOnHost"))
          throw Error("device " + str(d, "PathOnHost") + ": sbx passes a device at its host path (PathInContainer " + in + " differs)");
        ask.devices.push_back(str(d, "PathOnHost"));
      }
  if (ask.gpus.empty() && ask.devices.empty()) return std::nullopt;
  return ask;
}

std::optional<GpuAsk> gpus_from_docker(const json& cfg) {
  // A field of the wrong JSON type (a string where an object belongs…) is the
  // client's error: 400 with nlohmann's words, not a 500.
  try {
    return gpus_from_docker_unchecked(cfg);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::InvalidArgument, std::string("invalid container config: a field has the wrong JSON type (") + e.what() + ")");
  }
}

static engine::UsernsMode userns_mode_from_docker_unchecked(const json& cfg) {
  auto hc = cfg.find("HostConfig");
  if (hc == cfg.end() || !hc->is_object()) return engine::UsernsMode::Auto;
  auto m = hc->find("UsernsMode");
  if (m == hc->end() || m->is_null() || (m->is_string() && m->get<std::string>().empty())) return engine::UsernsMode::Auto;
  if (m->is_string() && m->get<std::string>() == "host") return engine::UsernsMode::Host;
  throw Error(ErrorKind::Unsupported, "HostConfig.UsernsMode " + m->dump() +
              " is not supported by sbx serve: leave it empty (the container gets a user namespace of its own) or "
              "give \"host\" (none: uid 0 inside is root on the host)");
}

engine::UsernsMode userns_mode_from_docker(const json& cfg) {
  // A field of the wrong JSON type (a string where an object belongs…) is the
  // client's error: 400 with nlohmann's words, not a 500.
  try {
    return userns_mode_from_docker_unchecked(cfg);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::InvalidArgument, std::string("invalid container config: a field has the wrong JSON type (") + e.what() + ")");
  }
}

}  // namespace sbx::server
