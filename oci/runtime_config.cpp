#include "oci/runtime_config.h"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace sbx::oci {

using nlohmann::json;

namespace {

// runc's defaults (libcontainer/specconv/example.go): paths the sandbox must
// not read, and paths it may read but not write.
const char* const kMaskedPaths[] = {
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap"};
const char* const kReadonlyPaths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                      "/proc/sysrq-trigger"};

const char* const kAnnotationPrefix = "org.sbx.";

json default_mounts() {
  return json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"},
       {"options", {"nosuid", "noexec", "nodev"}}},
      {{"destination", "/dev"}, {"type", "tmpfs"}, {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
      {{"destination", "/dev/shm"}, {"type", "tmpfs"}, {"source", "shm"},
       {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
      {{"destination", "/dev/mqueue"}, {"type", "mqueue"}, {"source", "mqueue"},
       {"options", {"nosuid", "noexec", "nodev"}}},
      {{"destination", "/sys"}, {"type", "sysfs"}, {"source", "sysfs"},
       {"options", {"nosuid", "noexec", "nodev", "ro"}}},
  });
}

bool is_default_mount(const std::string& dest) {
  for (const char* d : {"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys"}) {
    if (dest == d) return true;
  }
  return false;
}

// Integers of config.json, range-checked into T. nlohmann's get<unsigned>()
// of a negative or too large number is a plain cast (undefined behaviour for
// floats, silent truncation otherwise: uid 4294967296 would become 0, root).
// Found by tests/fuzz/fuzz_runtime_config. Throws json::type_error /
// out_of_range, which from_runtime_config reports with the field name.
template <class T>
T integer(const json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      throw json::out_of_range::create(406, "number " + std::to_string(u) + " is out of range", &v);
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
      throw json::out_of_range::create(406, "number " + std::to_string(i) + " is out of range", &v);
    return static_cast<T>(i);
  }
  throw json::type_error::create(302, std::string("expected an integer, got ") + v.type_name(), &v);
}



/// Milliseconds from an org.sbx.*-ms annotation: decimal digits only.
std::chrono::milliseconds annotation_ms(const std::string& key, const std::string& val) {
  int64_t ms = 0;
  auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), ms);
  if (ec != std::errc() || ptr != val.data() + val.size() || ms < 0)
    throw Error(ErrorKind::InvalidArgument,
                "config.json: annotation " + key + " must be a number of milliseconds, not '" + val + "'");
  return std::chrono::milliseconds(ms);
}

json id_maps(const std::vector<IdMapping>& maps) {
  json a = json::array();
  for (auto& m : maps) a.push_back({{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}});
  return a;
}


std::string device_type(char t) { return std::string(1, t); }



}  // namespace

std::string to_runtime_config(const SandboxSpec& spec, const RuntimeConfigOptions& opts) {
  if (spec.process.args.empty()) throw Error("cannot write config.json: the sandbox has no command (process.args is empty)");
  json j;
  j["ociVersion"] = "1.0.2";

  json& p = j["process"];
  p["terminal"] = spec.process.terminal;
  p["user"] = {{"uid", spec.process.uid}, {"gid", spec.process.gid}};
  if (!spec.process.additional_gids.empty()) p["user"]["additionalGids"] = spec.process.additional_gids;
  if (!spec.process.user.empty()) p["user"]["username"] = spec.process.user;
  p["args"] = spec.process.args;
  p["env"] = spec.process.env;
  p["cwd"] = spec.process.cwd.empty() ? "/" : spec.process.cwd;
  const auto& caps = spec.process.capabilities;
  // As docker: a non-root user keeps the bounding set but starts with no
  // effective or permitted capabilities.
  const std::vector<std::string> none;
  const auto& held = spec.process.uid == 0 ? caps : none;
  p["capabilities"] = {{"bounding", caps}, {"effective", held}, {"permitted", held}};
  p["noNewPrivileges"] = spec.process.no_new_privileges;
  json rl = json::array();
  for (auto& r : spec.process.rlimits) rl.push_back({{"type", r.type}, {"soft", r.soft}, {"hard", r.hard}});
  p["rlimits"] = rl;

  j["root"] = {{"path", opts.rootfs_path}, {"readonly", spec.readonly_rootfs}};
  if (!spec.hostname.empty()) j["hostname"] = spec.hostname;

  json mounts = opts.with_default_mounts ? default_mounts() : json::array();
  for (auto& m : spec.mounts) {
    json e = {{"destination", m.destination}, {"type", m.type}, {"source", m.source}};
    e["options"] = m.options;
    mounts.push_back(e);
  }
  j["mounts"] = mounts;

  if (!spec.create_container_hooks.empty()) {
    json hooks = json::array();
    for (auto& h : spec.create_container_hooks) {
      json e = {{"path", h.path}};
      if (!h.args.empty()) e["args"] = h.args;
      if (!h.env.empty()) e["env"] = h.env;
      if (h.timeout_s) e["timeout"] = *h.timeout_s;
      hooks.push_back(e);
    }
    j["hooks"]["createContainer"] = hooks;
  }

  json& linux = j["linux"];
  json ns = json::array({{{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}, {{"type", "cgroup"}}});
  if (!opts.network_namespace_path.empty())
    ns.push_back({{"type", "network"}, {"path", opts.network_namespace_path}});
  else if (spec.network != NetworkMode::Host)
    ns.push_back({{"type", "network"}});
  if (!spec.uid_mappings.empty()) ns.push_back({{"type", "user"}});
  linux["namespaces"] = ns;
  if (!spec.uid_mappings.empty()) {
    linux["uidMappings"] = id_maps(spec.uid_mappings);
    linux["gidMappings"] = id_maps(spec.gid_mappings);
  }
  if (!opts.cgroups_path.empty()) linux["cgroupsPath"] = opts.cgroups_path;

  json res = json::object();
  json devrules = json::array({{{"allow", false}, {"access", "rwm"}}});
  for (auto& d : spec.resources.devices) {
    json e = {{"allow", d.allow}, {"type", device_type(d.type)}, {"access", d.access}};
    if (d.major >= 0) e["major"] = d.major;
    if (d.minor >= 0) e["minor"] = d.minor;
    devrules.push_back(e);
  }
  res["devices"] = devrules;
  if (spec.resources.memory_bytes) res["memory"] = {{"limit", *spec.resources.memory_bytes}};
  if (spec.resources.cpus) {
    const int64_t period = 100000;
    res["cpu"] = {{"quota", static_cast<int64_t>(*spec.resources.cpus * period)}, {"period", period}};
  }
  if (spec.resources.pids_limit) res["pids"] = {{"limit", *spec.resources.pids_limit}};
  linux["resources"] = res;

  json devs = json::array();
  for (auto& d : spec.devices) {
    devs.push_back({{"path", d.path}, {"type", device_type(d.type)}, {"major", d.major}, {"minor", d.minor},
                    {"fileMode", d.file_mode}, {"uid", d.uid}, {"gid", d.gid}});
  }
  if (!devs.empty()) linux["devices"] = devs;
  linux["maskedPaths"] = kMaskedPaths;
  linux["readonlyPaths"] = kReadonlyPaths;

  json ann = json::object();
  for (auto& [k, v] : spec.annotations) ann[k] = v;
  if (!spec.image_ref.empty()) ann[std::string(kAnnotationPrefix) + "image"] = spec.image_ref;
  if (!spec.image_id.empty()) ann[std::string(kAnnotationPrefix) + "image-id"] = spec.image_id;
  if (!spec.name.empty()) ann[std::string(kAnnotationPrefix) + "name"] = spec.name;
  ann[std::string(kAnnotationPrefix) + "runtime"] = spec.runtime;
  if (spec.timeout.count()) ann[std::string(kAnnotationPrefix) + "timeout-ms"] = std::to_string(spec.timeout.count());
  if (spec.idle_timeout.count()) ann[std::string(kAnnotationPrefix) + "idle-timeout-ms"] = std::to_string(spec.idle_timeout.count());
  if (spec.disk_bytes) ann[std::string(kAnnotationPrefix) + "disk-bytes"] = std::to_string(spec.disk_bytes);
  for (auto& [k, v] : spec.labels) ann[std::string(kAnnotationPrefix) + "label." + k] = v;
  j["annotations"] = ann;
  return j.dump(2);
}


// ---- reading ------------------------------------------------------------------

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error("config.json: " + field + ": " + why);
}

std::string join_field(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

// Properties the spec defines that this reader keeps no field for: recorded
// by name when given a non-empty value (podman writes some as null, {}, "" or 0).
void note_unsupported(const json& obj, const std::string& where, std::initializer_list<const char*> keys,
                      std::vector<std::string>& out) {
  for (const char* key : keys) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    const json& v = *it;
    if (v.is_null() || ((v.is_object() || v.is_array()) && v.empty()) ||
        (v.is_string() && v.get_ref<const std::string&>().empty()) || (v.is_number() && v.get<double>() == 0) ||
        (v.is_boolean() && !v.get<bool>()))
      continue;
    out.push_back(join_field(where, key));
  }
}

const json* member(const json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}


std::string str(const json& o, const char* key, const std::string& where, const std::string& dflt = "") {
  const json* v = member(o, key);
  if (!v) return dflt;
  if (!v->is_string()) bad(join_field(where, key), "must be a string");
  return v->get<std::string>();
}

bool boolean(const json& o, const char* key, const std::string& where, bool dflt = false) {
  const json* v = member(o, key);
  if (!v) return dflt;
  if (!v->is_boolean()) bad(join_field(where, key), "must be true or false");
  return v->get<bool>();
}

template <class T>
std::optional<T> num(const json& o, const char* key, const std::string& where) {
  const json* v = member(o, key);
  if (!v) return std::nullopt;
  try {
    return integer<T>(*v);
  } catch (const json::exception& e) {
    bad(join_field(where, key), e.what());
  }
}

std::vector<std::string> strings(const json& o, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const json* v = member(o, key);
  if (!v) return out;
  if (!v->is_array()) bad(join_field(where, key), "must be an array of strings");
  for (const auto& s : *v) {
    if (!s.is_string()) bad(join_field(where, key), "must be an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

const json& array_at(const json& o, const char* key, const std::string& where) {
  static const json empty = json::array();
  const json* v = member(o, key);
  if (!v) return empty;
  if (!v->is_array()) bad(join_field(where, key), "must be an array");
  return *v;
}

RuntimeProcess parse_process_json(const json& p, const std::string& w, std::vector<std::string>& unsupported) {
  if (!p.is_object()) bad(w, "must be an object");
  note_unsupported(p, w, {"apparmorProfile", "selinuxLabel", "scheduler", "ioPriority", "execCPUAffinity"}, unsupported);
  RuntimeProcess out;
  out.terminal = boolean(p, "terminal", w);
  out.args = strings(p, "args", w);
  out.env = strings(p, "env", w);
  out.cwd = str(p, "cwd", w, "/");
  if (const json* u = member(p, "user")) {
    const std::string uw = w + ".user";
    if (!u->is_object()) bad(uw, "must be an object");
    out.uid = num<uint32_t>(*u, "uid", uw).value_or(0);
    out.gid = num<uint32_t>(*u, "gid", uw).value_or(0);
    out.umask = num<uint32_t>(*u, "umask", uw);
    for (const auto& g : array_at(*u, "additionalGids", uw)) {
      try {
        out.additional_gids.push_back(integer<uint32_t>(g));
      } catch (const json::exception& e) {
        bad(uw + ".additionalGids", e.what());
      }
    }
    out.username = str(*u, "username", uw);
  }
  if (const json* c = member(p, "capabilities")) {
    const std::string cw = w + ".capabilities";
    if (!c->is_object()) bad(cw, "must be an object");
    out.has_capabilities = true;
    out.capabilities.bounding = strings(*c, "bounding", cw);
    out.capabilities.effective = strings(*c, "effective", cw);
    out.capabilities.permitted = strings(*c, "permitted", cw);
    out.capabilities.inheritable = strings(*c, "inheritable", cw);
    out.capabilities.ambient = strings(*c, "ambient", cw);
  }
  for (const auto& r : array_at(p, "rlimits", w)) {
    const std::string rw = w + ".rlimits";
    if (!r.is_object()) bad(rw, "entries must be objects");
    spec::Rlimit l;
    l.type = str(r, "type", rw);
    if (l.type.empty()) bad(rw + ".type", "missing");
    l.soft = num<uint64_t>(r, "soft", rw).value_or(0);
    l.hard = num<uint64_t>(r, "hard", rw).value_or(0);
    out.rlimits.push_back(l);
  }
  out.no_new_privileges = boolean(p, "noNewPrivileges", w);
  out.oom_score_adj = num<int>(p, "oomScoreAdj", w);
  return out;
}

std::vector<spec::Hook> parse_hooks(const json& h, const char* stage) {
  std::vector<spec::Hook> out;
  const std::string w = std::string("hooks.") + stage;
  for (const auto& e : array_at(h, stage, "hooks")) {
    if (!e.is_object()) bad(w, "entries must be objects");
    spec::Hook hk;
    hk.path = str(e, "path", w);
    hk.args = strings(e, "args", w);
    hk.env = strings(e, "env", w);
    hk.timeout_s = num<int>(e, "timeout", w);
    out.push_back(hk);
  }
  return out;
}

spec::CgroupLimits parse_resources_json(const json& r, std::vector<std::string>& unsupported) {
  const std::string w = "linux.resources";
  if (!r.is_object()) bad(w, "must be an object");
  note_unsupported(r, w, {"blockIO", "hugepageLimits", "network", "rdma", "unified"}, unsupported);
  spec::CgroupLimits out;
  if (const json* m = member(r, "memory")) {
    const std::string mw = w + ".memory";
    if (!m->is_object()) bad(mw, "must be an object");
    out.memory_limit = num<int64_t>(*m, "limit", mw);
    out.memory_reservation = num<int64_t>(*m, "reservation", mw);
    out.memory_swap = num<int64_t>(*m, "swap", mw);
    out.swappiness = num<uint64_t>(*m, "swappiness", mw);
    out.kernel_tcp = num<int64_t>(*m, "kernelTCP", mw);
    out.disable_oom_killer = boolean(*m, "disableOOMKiller", mw);
    note_unsupported(*m, mw, {"kernel"}, unsupported);
  }
  if (const json* c = member(r, "cpu")) {
    const std::string cw = w + ".cpu";
    if (!c->is_object()) bad(cw, "must be an object");
    note_unsupported(*c, cw, {"realtimeRuntime", "realtimePeriod", "burst", "idle"}, unsupported);
    out.cpu_shares = num<uint64_t>(*c, "shares", cw);
    out.cpu_quota = num<int64_t>(*c, "quota", cw);
    out.cpu_period = num<uint64_t>(*c, "period", cw);
    out.cpuset_cpus = str(*c, "cpus", cw);
    out.cpuset_mems = str(*c, "mems", cw);
  }
  if (const json* p = member(r, "pids")) out.pids_limit = num<int64_t>(*p, "limit", w + ".pids");
  for (const auto& d : array_at(r, "devices", w)) {
    const std::string dw = w + ".devices";
    if (!d.is_object()) bad(dw, "entries must be objects");
    spec::DeviceRule rule;
    rule.allow = boolean(d, "allow", dw);
    std::string t = str(d, "type", dw, "a");
    rule.type = t.empty() ? 'a' : t[0];
    rule.major = num<int64_t>(d, "major", dw).value_or(-1);
    rule.minor = num<int64_t>(d, "minor", dw).value_or(-1);
    rule.access = str(d, "access", dw, "rwm");
    out.devices.push_back(rule);
  }
  return out;
}

spec::SeccompProfile parse_seccomp_json(const json& s, std::vector<std::string>& unsupported) {
  const std::string sw = "linux.seccomp";
  if (!s.is_object()) bad(sw, "must be an object");
  note_unsupported(s, sw, {"listenerPath"}, unsupported);
  spec::SeccompProfile sc;
  sc.default_action = str(s, "defaultAction", sw);
  sc.default_errno_ret = num<unsigned>(s, "defaultErrnoRet", sw);
  sc.architectures = strings(s, "architectures", sw);
  sc.flags = strings(s, "flags", sw);
  for (const auto& r : array_at(s, "syscalls", sw)) {
    const std::string rw = sw + ".syscalls";
    if (!r.is_object()) bad(rw, "entries must be objects");
    spec::SeccompRule rule;
    rule.names = strings(r, "names", rw);
    rule.action = str(r, "action", rw);
    rule.errno_ret = num<unsigned>(r, "errnoRet", rw);
    for (const auto& a : array_at(r, "args", rw)) {
      const std::string aw = rw + ".args";
      if (!a.is_object()) bad(aw, "entries must be objects");
      rule.args.push_back({num<unsigned>(a, "index", aw).value_or(0), num<uint64_t>(a, "value", aw).value_or(0),
                           num<uint64_t>(a, "valueTwo", aw).value_or(0), str(a, "op", aw)});
    }
    sc.syscalls.push_back(rule);
  }
  return sc;
}

std::vector<IdMapping> id_maps_at(const json& l, const char* key) {
  std::vector<IdMapping> out;
  const std::string w = std::string("linux.") + key;
  for (const auto& m : array_at(l, key, "linux")) {
    if (!m.is_object()) bad(w, "entries must be objects");
    out.push_back({num<uint32_t>(m, "containerID", w).value_or(0), num<uint32_t>(m, "hostID", w).value_or(0),
                   num<uint32_t>(m, "size", w).value_or(0)});
  }
  return out;
}

json parse_text(std::string_view text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(what + ": not valid JSON, or not a JSON object");
  return j;
}

}  // namespace

const RuntimeNamespace* RuntimeConfig::find_namespace(const std::string& type) const {
  for (const auto& n : namespaces)
    if (n.type == type) return &n;
  return nullptr;
}

RuntimeProcess parse_runtime_process(std::string_view json_text, const std::string& where) {
  std::vector<std::string> ignored;
  return parse_process_json(parse_text(json_text, where.empty() ? "process" : where), where.empty() ? "process" : where,
                            ignored);
}

spec::CgroupLimits parse_runtime_resources(std::string_view json_text) {
  std::vector<std::string> ignored;
  return parse_resources_json(parse_text(json_text, "resources"), ignored);
}

RuntimeConfig parse_runtime_config(std::string_view json_text, const std::string& bundle) {
  json j = parse_text(json_text, "config.json");
  RuntimeConfig c;
  try {
    c.oci_version = str(j, "ociVersion", "");
    if (const json* p = member(j, "process")) {
      c.has_process = true;
      c.process = parse_process_json(*p, "process", c.unsupported);
    }
    if (const json* r = member(j, "root")) {
      if (!r->is_object()) bad("root", "must be an object");
      c.has_root = true;
      c.root_path = str(*r, "path", "root");
      if (!c.root_path.empty() && c.root_path[0] != '/' && !bundle.empty()) c.root_path = bundle + "/" + c.root_path;
      c.root_readonly = boolean(*r, "readonly", "root");
    }
    c.hostname = str(j, "hostname", "");
    c.domainname = str(j, "domainname", "");
    for (const auto& m : array_at(j, "mounts", "")) {
      if (!m.is_object()) bad("mounts", "entries must be objects");
      note_unsupported(m, "mounts", {"uidMappings", "gidMappings"}, c.unsupported);
      spec::Mount mt;
      mt.destination = str(m, "destination", "mounts");
      mt.type = str(m, "type", "mounts");
      mt.source = str(m, "source", "mounts");
      mt.options = strings(m, "options", "mounts");
      c.mounts.push_back(mt);
    }
    if (const json* a = member(j, "annotations")) {
      if (!a->is_object()) bad("annotations", "must be an object");
      for (auto it = a->begin(); it != a->end(); ++it) {
        if (!it.value().is_string()) bad("annotations[" + it.key() + "]", "must be a string");
        c.annotations[it.key()] = it.value().get<std::string>();
      }
    }
    if (const json* h = member(j, "hooks")) {
      if (!h->is_object()) bad("hooks", "must be an object");
      c.hooks.prestart = parse_hooks(*h, "prestart");
      c.hooks.create_runtime = parse_hooks(*h, "createRuntime");
      c.hooks.create_container = parse_hooks(*h, "createContainer");
      c.hooks.start_container = parse_hooks(*h, "startContainer");
      c.hooks.poststart = parse_hooks(*h, "poststart");
      c.hooks.poststop = parse_hooks(*h, "poststop");
    }
    const json* lp = member(j, "linux");
    if (!lp) return c;
    const json& l = *lp;
    if (!l.is_object()) bad("linux", "must be an object");
    c.has_linux = true;
    note_unsupported(l, "linux", {"intelRdt", "personality", "timeOffsets", "netDevices", "memoryPolicy"}, c.unsupported);
    c.mount_label = str(l, "mountLabel", "linux");
    for (const auto& n : array_at(l, "namespaces", "linux")) {
      if (!n.is_object()) bad("linux.namespaces", "entries must be objects");
      c.namespaces.push_back({str(n, "type", "linux.namespaces"), str(n, "path", "linux.namespaces")});
    }
    c.uid_mappings = id_maps_at(l, "uidMappings");
    c.gid_mappings = id_maps_at(l, "gidMappings");
    for (const auto& d : array_at(l, "devices", "linux")) {
      const std::string dw = "linux.devices";
      if (!d.is_object()) bad(dw, "entries must be objects");
      spec::DeviceNode n;
      n.path = str(d, "path", dw);
      std::string t = str(d, "type", dw, "c");
      n.type = t.empty() ? 'c' : t[0];
      n.major = num<int64_t>(d, "major", dw).value_or(0);
      n.minor = num<int64_t>(d, "minor", dw).value_or(0);
      n.file_mode = num<uint32_t>(d, "fileMode", dw).value_or(0666);
      n.uid = num<uint32_t>(d, "uid", dw).value_or(0);
      n.gid = num<uint32_t>(d, "gid", dw).value_or(0);
      c.devices.push_back(n);
    }
    c.cgroups_path = str(l, "cgroupsPath", "linux");
    if (const json* r = member(l, "resources")) c.resources = parse_resources_json(*r, c.unsupported);
    if (const json* sy = member(l, "sysctl")) {
      if (!sy->is_object()) bad("linux.sysctl", "must be an object");
      for (auto it = sy->begin(); it != sy->end(); ++it) {
        if (!it.value().is_string()) bad("linux.sysctl[" + it.key() + "]", "must be a string");
        c.sysctl[it.key()] = it.value().get<std::string>();
      }
    }
    c.masked_paths = strings(l, "maskedPaths", "linux");
    c.readonly_paths = strings(l, "readonlyPaths", "linux");
    c.rootfs_propagation = str(l, "rootfsPropagation", "linux");
    if (const json* s = member(l, "seccomp")) c.seccomp = parse_seccomp_json(*s, c.unsupported);
    return c;
  } catch (const json::exception& e) {
    throw Error(std::string("config.json: ") + e.what());
  }
}

SandboxSpec from_runtime_config(std::string_view text) {
  RuntimeConfig c = parse_runtime_config(text, "");
  SandboxSpec s;
  if (!c.has_process) throw Error("config.json: process: missing");
  const RuntimeProcess& p = c.process;
  if (p.args.empty()) throw Error("config.json: process.args is empty");
  s.process.args = p.args;
  s.process.env = p.env;
  s.process.cwd = p.cwd;
  s.process.terminal = p.terminal;
  s.process.uid = p.uid;
  s.process.gid = p.gid;
  s.process.additional_gids = p.additional_gids;
  s.process.user = p.username;
  if (p.has_capabilities) s.process.capabilities = p.capabilities.bounding;
  else s.process.capabilities.clear();
  s.process.no_new_privileges = p.no_new_privileges;
  s.process.rlimits = p.rlimits;
  s.readonly_rootfs = c.root_readonly;
  s.hostname = c.hostname;
  for (const auto& m : c.mounts)
    if (!is_default_mount(m.destination)) s.mounts.push_back(m);
  s.create_container_hooks = c.hooks.create_container;
  s.network = c.find_namespace("network") ? NetworkMode::None : NetworkMode::Host;
  s.uid_mappings = c.uid_mappings;
  s.gid_mappings = c.gid_mappings;
  const spec::CgroupLimits& r = c.resources;
  s.resources.memory_bytes = r.memory_limit;
  if (r.cpu_quota && r.cpu_period) {
    if (*r.cpu_period == 0) throw Error(ErrorKind::InvalidArgument,
                "config.json: linux.resources.cpu.period must be positive");
    s.resources.cpus = static_cast<double>(*r.cpu_quota) / static_cast<double>(*r.cpu_period);
  }
  s.resources.pids_limit = r.pids_limit;
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceRule& rule = r.devices[i];
    // The leading "deny all" is what to_runtime_config always writes.
    if (i == 0 && !rule.allow && rule.type == 'a' && rule.major < 0 && rule.minor < 0) continue;
    s.resources.devices.push_back(rule);
  }
  s.devices = c.devices;
  const std::string pre = kAnnotationPrefix;
  for (const auto& [k, val] : c.annotations) {
    if (k.rfind(pre, 0) != 0) {
      s.annotations[k] = val;
      continue;
    }
    std::string key = k.substr(pre.size());
    if (key == "image") s.image_ref = val;
    else if (key == "image-id") s.image_id = val;
    else if (key == "name") s.name = val;
    else if (key == "runtime") s.runtime = val;
    else if (key == "timeout-ms") s.timeout = annotation_ms(k, val);
    else if (key == "idle-timeout-ms") s.idle_timeout = annotation_ms(k, val);
    else if (key == "disk-bytes") {
      auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), s.disk_bytes);
      if (ec != std::errc() || ptr != val.data() + val.size() || val.empty())
        throw Error(ErrorKind::InvalidArgument,
                    "config.json: annotation " + k + " must be a number of bytes, not '" + val + "'");
    }
    else if (key.rfind("label.", 0) == 0) s.labels[key.substr(6)] = val;
    else s.annotations[k] = val;
  }
  return s;
}

}  // namespace sbx::oci
