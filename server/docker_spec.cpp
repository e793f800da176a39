// Docker container config → SandboxSpec (server/docker_spec.h).
#include "server/docker_spec.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/error.h"
#include "runtime/backends.h"
#include "runtime/default_bounds.h"
#include "runtime/image_config.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/rlimits.h"
#include "runtime/linux/sandbox_network.h"

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

int64_t num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

/// "HOST:CTR[:OPTS]" (HostConfig.Binds) → a bind mount, as `sbx run -v`.
Mount parse_bind(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string p;
  while (std::getline(in, p, ':')) parts.push_back(p);
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
    throw Error("invalid bind '" + text + "': expected HOST-DIR:CONTAINER-DIR[:ro]");
  if (parts[0][0] != '/') throw Error("invalid bind '" + text + "': named volumes are not supported; use a host path");
  if (parts[1][0] != '/') throw Error("invalid bind '" + text + "': the container path must be absolute");
  char* real = ::realpath(parts[0].c_str(), nullptr);
  if (!real) throw_errno("bind source " + parts[0]);
  Mount m{parts[1], "bind", real, {"rbind"}};
  ::free(real);
  if (parts.size() == 3) {
    std::stringstream opts(parts[2]);
    while (std::getline(opts, p, ',')) {
      if (p == "ro" || p == "nosuid" || p == "nodev" || p == "noexec") m.options.push_back(p);
      else if (p != "rw" && p != "z" && p != "Z" && p != "rprivate" && p != "private")
        throw Error("invalid bind '" + text + "': unknown option '" + p + "' (ro, rw, nosuid, nodev, noexec)");
    }
  }
  return m;
}

/// HostConfig.Mounts entry: {"Type": "bind"|"tmpfs", "Source", "Target", "ReadOnly"}.
Mount parse_mount(const json& m) {
  std::string type = str(m, "Type"), target = str(m, "Target");
  if (target.empty() || target[0] != '/') throw Error("invalid mount: Target must be an absolute path");
  bool ro = m.value("ReadOnly", false);
  if (type == "bind") {
    std::string src = str(m, "Source");
    return parse_bind(src + ":" + target + (ro ? ":ro" : ""));
  }
  if (type == "tmpfs") {
    Mount t{target, "tmpfs", "tmpfs", {"nosuid", "nodev", "noexec"}};
    if (ro) t.options.push_back("ro");
    if (auto o = m.find("TmpfsOptions"); o != m.end() && o->is_object()) {
      if (int64_t size = num(*o, "SizeBytes"); size > 0) t.options.push_back("size=" + std::to_string(size));
      if (int64_t mode = num(*o, "Mode"); mode > 0) {
        std::ostringstream os;
        os << std::oct << mode;
        t.options.push_back("mode=" + os.str());
      }
    }
    return t;
  }
  throw Error("invalid mount type '" + type + "': sbx serve supports bind and tmpfs (no named volumes)");
}

}  // namespace

SandboxSpec spec_from_docker(const json& cfg, const oci::ImageRecord& img, const std::vector<std::string>& layer_dirs,
                             const std::string& id, const std::string& name, const std::string& default_runtime) {
  const json empty = json::object();
  const json& hc = cfg.contains("HostConfig") && cfg["HostConfig"].is_object() ? cfg["HostConfig"] : empty;
  SandboxSpec spec;
  spec.id = id;
  spec.name = name;
  spec.image_ref = str(cfg, "Image");
  spec.image_id = img.id;
  spec.layer_dirs = layer_dirs;
  std::string hostname = str(cfg, "Hostname");
  spec.hostname = hostname.empty() ? id.substr(0, 12) : hostname;

  runtime::ProcessOverrides o;
  o.command = string_list(cfg.value("Cmd", json()));
  // Entrypoint: null/absent keeps the image's; [] or "" clears it (docker --entrypoint "").
  if (auto e = cfg.find("Entrypoint"); e != cfg.end() && !e->is_null()) {
    std::vector<std::string> ep = string_list(*e);
    if (ep.size() == 1 && ep[0].empty()) ep.clear();
    o.entrypoint = ep;
  }
  for (const auto& e : string_list(cfg.value("Env", json())))
    if (auto kv = runtime::expand_env_arg(e)) o.env.push_back(*kv);
  if (std::string w = str(cfg, "WorkingDir"); !w.empty()) o.workdir = w;
  if (std::string u = str(cfg, "User"); !u.empty()) o.user = u;
  runtime::apply_image_config(spec, img.config, o);
  spec.process.capabilities = default_capabilities();

  if (auto l = cfg.find("Labels"); l != cfg.end() && l->is_object())
    for (const auto& [k, v] : l->items())
      if (v.is_string()) spec.labels[k] = v.get<std::string>();

  std::string net = str(hc, "NetworkMode");
  if (net.empty() || net == "default" || net == "bridge" || net == "none") {
    spec.network = NetworkMode::None;  // sbx has no bridge: loopback only
  } else if (net == "host") {
    spec.network = NetworkMode::Host;
  } else {
    throw Error("network mode '" + net + "' is not supported by sbx serve (none, default, bridge, host)");
  }
  // PortBindings {"80/tcp": [{"HostIp": "", "HostPort": "8080"}]}: sbx's -p,
  // which needs a network of the sandbox's own (--network private): the
  // default/bridge mode with ports published is that, as docker's bridge.
  if (auto pb = hc.find("PortBindings"); pb != hc.end() && pb->is_object() && !pb->empty()) {
    if (net == "none" || net == "host")
      throw Error("port bindings need a network of the container's own: NetworkMode '" + net +
                  "' has none (leave it default or bridge)");
    for (const auto& [port, binds] : pb->items()) {
      std::string cport = port.substr(0, port.find('/'));
      std::string proto = port.find('/') == std::string::npos ? "tcp" : port.substr(port.find('/') + 1);
      if (!binds.is_array()) continue;
      for (const auto& b : binds) {
        std::string hip = b.is_object() ? str(b, "HostIp") : "", hport = b.is_object() ? str(b, "HostPort") : "";
        if (hport.empty()) throw Error("port binding " + port + ": sbx needs a HostPort (no random host ports)");
        if (hip == "0.0.0.0" || hip == "::") hip.clear();
        spec.net.publish.push_back(runtime::parse_publish((hip.empty() ? "" : hip + ":") + hport + ":" + cport + "/" + proto));
      }
    }
    if (!spec.net.publish.empty()) spec.network = NetworkMode::Private;
  }
  for (const auto& b : string_list(hc.value("Binds", json()))) spec.mounts.push_back(parse_bind(b));
  if (auto m = hc.find("Mounts"); m != hc.end() && m->is_array())
    for (const auto& e : *m) spec.mounts.push_back(parse_mount(e));
  if (auto t = hc.find("Tmpfs"); t != hc.end() && t->is_object())
    for (const auto& [path, opts] : t->items()) {
      Mount tm{path, "tmpfs", "tmpfs", {"nosuid", "nodev", "noexec"}};
      if (opts.is_string() && !opts.get<std::string>().empty()) {
        std::stringstream in(opts.get<std::string>());
        std::string x;
        while (std::getline(in, x, ',')) tm.options.push_back(x);
      }
      spec.mounts.push_back(tm);
    }
  spec.readonly_rootfs = hc.value("ReadonlyRootfs", false);
  // CapAdd/CapDrop over the default set ("ALL" in either; names with or without CAP_).
  auto cap_name = [](std::string c) {
    for (auto& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return c == "ALL" || c.rfind("CAP_", 0) == 0 ? c : "CAP_" + c;
  };
  auto& caps = spec.process.capabilities;
  for (const auto& d : string_list(hc.value("CapDrop", json()))) {
    std::string n = cap_name(d);
    if (n == "ALL") caps.clear();
    else {
      runtime::parse_capabilities({n});  // an unknown name is an error, as in docker
      caps.erase(std::remove(caps.begin(), caps.end(), n), caps.end());
    }
  }
  for (const auto& a : string_list(hc.value("CapAdd", json()))) {
    std::string n = cap_name(a);
    if (n == "ALL") throw Error("CapAdd ALL is not supported by sbx serve: name the capabilities to add");
    runtime::parse_capabilities({n});
    if (std::find(caps.begin(), caps.end(), n) == caps.end()) caps.push_back(n);
  }
  if (int64_t mem = num(hc, "Memory"); mem > 0) spec.resources.memory_bytes = mem;
  if (int64_t nano = num(hc, "NanoCpus"); nano > 0) spec.resources.cpus = static_cast<double>(nano) / 1e9;
  int64_t pids = num(hc, "PidsLimit");
  spec.resources.pids_limit = pids > 0 ? pids : 1024;  // `sbx create`'s default; -1/0 in Docker: unlimited
  if (hc.contains("PidsLimit") && hc["PidsLimit"].is_number() && pids <= 0 && hc["PidsLimit"].get<int64_t>() != 0)
    spec.resources.pids_limit.reset();

  std::string rt = str(hc, "Runtime");
  if (auto l = spec.labels.find("sbx.runtime"); l != spec.labels.end() && (rt.empty() || rt == "runc")) rt = l->second;
  if (rt.empty() || rt == "runc") rt = default_runtime.empty() ? runtime::default_backend_name() : default_runtime;
  rt = runtime::backend_name_for_runtime(rt);  // Docker's "runsc"
  runtime::validate_backend_name(rt);
  spec.runtime = rt;
  runtime::apply_default_bounds(spec, false);
  for (const auto& w : runtime::clamp_rlimits(spec.process.rlimits)) (void)w;
  return spec;
}

std::optional<GpuAsk> gpus_from_docker(const json& cfg) {
  const json empty = json::object();
  const json& hc = cfg.contains("HostConfig") && cfg["HostConfig"].is_object() ? cfg["HostConfig"] : empty;
  GpuAsk ask;
  if (auto dr = hc.find("DeviceRequests"); dr != hc.end() && dr->is_array()) {
    for (const auto& d : *dr) {
      if (!d.is_object()) continue;
      std::string driver = str(d, "Driver");
      if (!driver.empty() && driver != "nvidia" && driver != "cdi")
        throw Error("device request driver '" + driver + "' is not supported by sbx serve (nvidia, cdi)");
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

engine::UsernsMode userns_mode_from_docker(const json& cfg) {
  auto hc = cfg.find("HostConfig");
  if (hc == cfg.end() || !hc->is_object()) return engine::UsernsMode::Auto;
  auto m = hc->find("UsernsMode");
  if (m == hc->end() || m->is_null() || (m->is_string() && m->get<std::string>().empty())) return engine::UsernsMode::Auto;
  if (m->is_string() && m->get<std::string>() == "host") return engine::UsernsMode::Host;
  throw Error("HostConfig.UsernsMode " + m->dump() +
              " is not supported by sbx serve: leave it empty (the container gets a user namespace of its own) or "
              "give \"host\" (none: uid 0 inside is root on the host)");
}

}  // namespace sbx::server
