#include "ocirt/config.h"

#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"

namespace sbx::ocirt {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error("config.json: " + field + ": " + why);
}

// Refuses keys of `obj` that sbx-runc does not know: a field it would
// silently ignore could leave the container weaker than asked for.
void only_known(const json& obj, const std::string& where, std::initializer_list<const char*> known) {
  if (!obj.is_object()) bad(where, "must be an object");
  std::set<std::string> k(known.begin(), known.end());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (k.count(it.key())) continue;
    // Empty values ask for nothing (podman writes some as null or {}).
    const json& v = it.value();
    if (v.is_null() || ((v.is_object() || v.is_array() || v.is_string()) && v.empty())) continue;
    bad(where.empty() ? it.key() : where + "." + it.key(), "not supported by sbx-runc");
  }
}

std::string str(const json& o, const char* key, const std::string& where, const std::string& dflt = "") {
  if (!o.contains(key) || o[key].is_null()) return dflt;
  if (!o[key].is_string()) bad(where + "." + key, "must be a string");
  return o[key].get<std::string>();
}

template <class T>
std::optional<T> num(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o[key].is_null()) return std::nullopt;
  if (!o[key].is_number()) bad(where + "." + key, "must be a number");
  return o[key].get<T>();
}

std::vector<std::string> strings(const json& o, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!o.contains(key) || o[key].is_null()) return out;
  if (!o[key].is_array()) bad(where + "." + key, "must be an array of strings");
  for (const auto& s : o[key]) {
    if (!s.is_string()) bad(where + "." + key, "must be an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

Process parse_process_json(const json& p, const std::string& w) {
  only_known(p, w, {"terminal", "consoleSize", "user", "args", "env", "cwd", "capabilities", "rlimits",
                    "noNewPrivileges", "oomScoreAdj", "apparmorProfile", "selinuxLabel", "commandLine"});
  Process out;
  if (p.contains("terminal") && p["terminal"].is_boolean()) out.terminal = p["terminal"].get<bool>();
  out.args = strings(p, "args", w);
  if (out.args.empty()) bad(w + ".args", "must name the program to run");
  out.env = strings(p, "env", w);
  out.cwd = str(p, "cwd", w, "/");
  if (out.cwd.empty() || out.cwd[0] != '/') bad(w + ".cwd", "must be an absolute path");
  if (!str(p, "apparmorProfile", w).empty())
    bad(w + ".apparmorProfile", "AppArmor profiles are not applied by sbx-runc");
  if (!str(p, "selinuxLabel", w).empty()) bad(w + ".selinuxLabel", "SELinux labels are not applied by sbx-runc");
  if (p.contains("user")) {
    const json& u = p["user"];
    const std::string uw = w + ".user";
    only_known(u, uw, {"uid", "gid", "umask", "additionalGids", "username"});
    out.uid = num<uint32_t>(u, "uid", uw).value_or(0);
    out.gid = num<uint32_t>(u, "gid", uw).value_or(0);
    out.umask = num<uint32_t>(u, "umask", uw);
    if (u.contains("additionalGids") && u["additionalGids"].is_array())
      for (const auto& g : u["additionalGids"]) out.additional_gids.push_back(g.get<uint32_t>());
  }
  if (p.contains("capabilities") && !p["capabilities"].is_null()) {
    const json& c = p["capabilities"];
    const std::string cw = w + ".capabilities";
    only_known(c, cw, {"bounding", "effective", "permitted", "inheritable", "ambient"});
    out.capabilities.bounding = strings(c, "bounding", cw);
    out.capabilities.effective = strings(c, "effective", cw);
    out.capabilities.permitted = strings(c, "permitted", cw);
    out.capabilities.inheritable = strings(c, "inheritable", cw);
    out.capabilities.ambient = strings(c, "ambient", cw);
  }
  if (p.contains("rlimits") && p["rlimits"].is_array()) {
    for (const auto& r : p["rlimits"]) {
      spec::Rlimit l;
      l.type = str(r, "type", w + ".rlimits");
      l.soft = num<uint64_t>(r, "soft", w + ".rlimits").value_or(0);
      l.hard = num<uint64_t>(r, "hard", w + ".rlimits").value_or(0);
      out.rlimits.push_back(l);
    }
  }
  if (p.contains("noNewPrivileges") && p["noNewPrivileges"].is_boolean())
    out.no_new_privileges = p["noNewPrivileges"].get<bool>();
  out.oom_score_adj = num<int>(p, "oomScoreAdj", w);
  return out;
}

std::vector<spec::Hook> parse_hooks(const json& h, const char* stage) {
  std::vector<spec::Hook> out;
  if (!h.contains(stage) || h[stage].is_null()) return out;
  const std::string w = std::string("hooks.") + stage;
  if (!h[stage].is_array()) bad(w, "must be an array");
  for (const auto& e : h[stage]) {
    spec::Hook hk;
    hk.path = str(e, "path", w);
    if (hk.path.empty() || hk.path[0] != '/') bad(w + ".path", "must be an absolute path");
    hk.args = strings(e, "args", w);
    hk.env = strings(e, "env", w);
    if (auto t = num<int>(e, "timeout", w)) {
      if (*t <= 0) bad(w + ".timeout", "must be positive");
      hk.timeout_s = *t;
    }
    out.push_back(hk);
  }
  return out;
}

int64_t device_number(const json& d, const char* key) {
  if (!d.contains(key) || d[key].is_null()) return -1;
  return d[key].get<int64_t>();
}

Resources parse_resources_json(const json& r) {
  const std::string w = "linux.resources";
  only_known(r, w, {"devices", "memory", "cpu", "pids", "blockIO", "hugepageLimits", "network", "rdma", "unified"});
  for (const char* k : {"blockIO", "hugepageLimits", "network", "rdma", "unified"})
    if (r.contains(k) && !r[k].is_null() && !r[k].empty()) bad(w + "." + k, "not supported by sbx-runc");
  Resources out;
  if (r.contains("memory") && !r["memory"].is_null()) {
    const json& m = r["memory"];
    only_known(m, w + ".memory", {"limit", "reservation", "swap", "kernel", "kernelTCP", "swappiness", "disableOOMKiller", "useHierarchy", "checkBeforeUpdate"});
    out.memory_limit = num<int64_t>(m, "limit", w + ".memory");
    out.memory_reservation = num<int64_t>(m, "reservation", w + ".memory");
    out.memory_swap = num<int64_t>(m, "swap", w + ".memory");
    if (m.contains("disableOOMKiller") && m["disableOOMKiller"].is_boolean() && m["disableOOMKiller"].get<bool>())
      bad(w + ".memory.disableOOMKiller", "not supported by sbx-runc");
  }
  if (r.contains("cpu") && !r["cpu"].is_null()) {
    const json& c = r["cpu"];
    only_known(c, w + ".cpu", {"shares", "quota", "period", "cpus", "mems", "realtimeRuntime", "realtimePeriod", "idle"});
    out.cpu_shares = num<uint64_t>(c, "shares", w + ".cpu");
    out.cpu_quota = num<int64_t>(c, "quota", w + ".cpu");
    out.cpu_period = num<uint64_t>(c, "period", w + ".cpu");
    out.cpuset_cpus = str(c, "cpus", w + ".cpu");
    out.cpuset_mems = str(c, "mems", w + ".cpu");
    for (const char* k : {"realtimeRuntime", "realtimePeriod"})
      if (c.contains(k) && c[k].is_number() && c[k].get<int64_t>() != 0) bad(w + ".cpu." + k, "not supported by sbx-runc");
  }
  if (r.contains("pids") && !r["pids"].is_null()) out.pids_limit = num<int64_t>(r["pids"], "limit", w + ".pids");
  if (r.contains("devices") && r["devices"].is_array()) {
    for (const auto& d : r["devices"]) {
      spec::DeviceRule rule;
      rule.allow = d.value("allow", false);
      std::string t = str(d, "type", w + ".devices", "a");
      if (t.size() != 1 || std::string("acb").find(t[0]) == std::string::npos) bad(w + ".devices.type", "must be a, c or b");
      rule.type = t[0];
      rule.major = device_number(d, "major");
      rule.minor = device_number(d, "minor");
      rule.access = str(d, "access", w + ".devices", "rwm");
      out.devices.push_back(rule);
    }
  }
  return out;
}

json parse_text(std::string_view text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(what + ": not valid JSON: " + e.what());
  }
}

}  // namespace

const Namespace* Config::find_namespace(const std::string& type) const {
  for (const auto& n : namespaces)
    if (n.type == type) return &n;
  return nullptr;
}

Process parse_process(std::string_view json_text, const std::string& where) {
  return parse_process_json(parse_text(json_text, where), where.empty() ? "process" : where);
}

Resources parse_resources(std::string_view json_text) {
  return parse_resources_json(parse_text(json_text, "resources"));
}

Config parse_config(std::string_view json_text, const std::string& bundle) {
  json j = parse_text(json_text, "config.json");
  try {
    only_known(j, "", {"ociVersion", "process", "root", "hostname", "domainname", "mounts", "hooks", "annotations", "linux"});
    Config c;
    c.oci_version = str(j, "ociVersion", "");
    if (!j.contains("process") || !j["process"].is_object()) bad("process", "missing (sbx-runc runs one process per container)");
    c.process = parse_process_json(j["process"], "process");
    if (!j.contains("root") || !j["root"].is_object()) bad("root", "missing");
    only_known(j["root"], "root", {"path", "readonly"});
    c.root_path = str(j["root"], "path", "root");
    if (c.root_path.empty()) bad("root.path", "missing");
    if (c.root_path[0] != '/') c.root_path = bundle + "/" + c.root_path;
    c.root_readonly = j["root"].value("readonly", false);
    c.hostname = str(j, "hostname", "");
    c.domainname = str(j, "domainname", "");
    if (j.contains("mounts") && j["mounts"].is_array()) {
      for (const auto& m : j["mounts"]) {
        only_known(m, "mounts", {"destination", "type", "source", "options", "uidMappings", "gidMappings"});
        spec::Mount mt;
        mt.destination = str(m, "destination", "mounts");
        if (mt.destination.empty() || mt.destination[0] != '/') bad("mounts.destination", "'" + mt.destination + "' must be an absolute path");
        mt.type = str(m, "type", "mounts");
        mt.source = str(m, "source", "mounts");
        mt.options = strings(m, "options", "mounts");
        if (mt.type.empty()) {
          bool bind = false;
          for (const auto& o : mt.options) bind |= (o == "bind" || o == "rbind");
          if (!bind) bad("mounts[" + mt.destination + "].type", "missing (only bind mounts may leave it out)");
          mt.type = "bind";
        }
        c.mounts.push_back(mt);
      }
    }
    if (j.contains("annotations") && j["annotations"].is_object())
      for (auto it = j["annotations"].begin(); it != j["annotations"].end(); ++it)
        if (it.value().is_string()) c.annotations[it.key()] = it.value().get<std::string>();
    if (j.contains("hooks") && !j["hooks"].is_null()) {
      const json& h = j["hooks"];
      only_known(h, "hooks", {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"});
      c.hooks.prestart = parse_hooks(h, "prestart");
      c.hooks.create_runtime = parse_hooks(h, "createRuntime");
      c.hooks.create_container = parse_hooks(h, "createContainer");
      c.hooks.start_container = parse_hooks(h, "startContainer");
      c.hooks.poststart = parse_hooks(h, "poststart");
      c.hooks.poststop = parse_hooks(h, "poststop");
    }
    if (!j.contains("linux") || !j["linux"].is_object()) bad("linux", "missing (sbx-runc runs Linux containers)");
    const json& l = j["linux"];
    only_known(l, "linux", {"namespaces", "uidMappings", "gidMappings", "devices", "cgroupsPath", "resources", "sysctl",
                            "seccomp", "maskedPaths", "readonlyPaths", "rootfsPropagation", "mountLabel"});
    if (!str(l, "mountLabel", "linux").empty()) bad("linux.mountLabel", "SELinux labels are not applied by sbx-runc");
    static const std::set<std::string> kNs = {"pid", "network", "mount", "ipc", "uts", "user", "cgroup"};
    if (l.contains("namespaces") && l["namespaces"].is_array()) {
      for (const auto& n : l["namespaces"]) {
        Namespace ns{str(n, "type", "linux.namespaces"), str(n, "path", "linux.namespaces")};
        if (!kNs.count(ns.type)) bad("linux.namespaces.type", "'" + ns.type + "' is not supported by sbx-runc");
        if (c.find_namespace(ns.type)) bad("linux.namespaces", "'" + ns.type + "' is listed twice");
        if (ns.type == "user" && !ns.path.empty())
          bad("linux.namespaces[user].path", "joining a user namespace by path is not supported by sbx-runc");
        c.namespaces.push_back(ns);
      }
    }
    const Namespace* mnt = c.find_namespace("mount");
    if (!mnt || !mnt->path.empty())
      bad("linux.namespaces", "sbx-runc needs a new mount namespace (type \"mount\" without a path)");
    auto idmaps = [&](const char* key, std::vector<spec::IdMapping>& out) {
      if (!l.contains(key) || !l[key].is_array()) return;
      for (const auto& m : l[key])
        out.push_back({m.at("containerID").get<uint32_t>(), m.at("hostID").get<uint32_t>(), m.at("size").get<uint32_t>()});
    };
    idmaps("uidMappings", c.uid_mappings);
    idmaps("gidMappings", c.gid_mappings);
    const Namespace* user = c.find_namespace("user");
    if (user && (c.uid_mappings.empty() || c.gid_mappings.empty()))
      bad("linux.uidMappings", "a new user namespace needs uidMappings and gidMappings");
    if (!user && (!c.uid_mappings.empty() || !c.gid_mappings.empty()))
      bad("linux.uidMappings", "id mappings need a new user namespace in linux.namespaces");
    if (l.contains("devices") && l["devices"].is_array()) {
      for (const auto& d : l["devices"]) {
        spec::DeviceNode n;
        n.path = str(d, "path", "linux.devices");
        std::string t = str(d, "type", "linux.devices");
        if (t != "c" && t != "b" && t != "u" && t != "p") bad("linux.devices[" + n.path + "].type", "must be c, b, u or p");
        if (t == "p") bad("linux.devices[" + n.path + "].type", "FIFOs are not supported by sbx-runc");
        n.type = t == "b" ? 'b' : 'c';
        n.major = d.value("major", int64_t{0});
        n.minor = d.value("minor", int64_t{0});
        n.file_mode = d.value("fileMode", 0666u);
        n.uid = d.value("uid", 0u);
        n.gid = d.value("gid", 0u);
        c.devices.push_back(n);
      }
    }
    c.cgroups_path = str(l, "cgroupsPath", "linux");
    if (l.contains("resources") && !l["resources"].is_null()) c.resources = parse_resources_json(l["resources"]);
    if (l.contains("sysctl") && l["sysctl"].is_object())
      for (auto it = l["sysctl"].begin(); it != l["sysctl"].end(); ++it) c.sysctl[it.key()] = it.value().get<std::string>();
    c.masked_paths = strings(l, "maskedPaths", "linux");
    c.readonly_paths = strings(l, "readonlyPaths", "linux");
    c.rootfs_propagation = str(l, "rootfsPropagation", "linux");
    if (l.contains("seccomp") && !l["seccomp"].is_null()) {
      const json& s = l["seccomp"];
      const std::string sw = "linux.seccomp";
      only_known(s, sw, {"defaultAction", "defaultErrnoRet", "architectures", "flags", "syscalls", "listenerPath", "listenerMetadata"});
      Seccomp sc;
      sc.default_action = str(s, "defaultAction", sw);
      if (sc.default_action.empty()) bad(sw + ".defaultAction", "missing");
      sc.default_errno_ret = num<unsigned>(s, "defaultErrnoRet", sw);
      sc.architectures = strings(s, "architectures", sw);
      sc.flags = strings(s, "flags", sw);
      if (s.contains("syscalls") && s["syscalls"].is_array()) {
        for (const auto& r : s["syscalls"]) {
          SeccompRule rule;
          rule.names = strings(r, "names", sw + ".syscalls");
          rule.action = str(r, "action", sw + ".syscalls");
          rule.errno_ret = num<unsigned>(r, "errnoRet", sw + ".syscalls");
          if (r.contains("args") && r["args"].is_array())
            for (const auto& a : r["args"])
              rule.args.push_back({a.at("index").get<unsigned>(), a.value("value", uint64_t{0}), a.value("valueTwo", uint64_t{0}),
                                   a.at("op").get<std::string>()});
          sc.syscalls.push_back(rule);
        }
      }
      c.seccomp = sc;
    }
    return c;
  } catch (const json::exception& e) {
    throw Error(std::string("config.json: ") + e.what());
  }
}

}  // namespace sbx::ocirt
