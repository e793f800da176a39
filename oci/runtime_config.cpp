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

/// obj[key] as an integer T, or `def` when absent.
template <class T>
T integer_or(const json& obj, const char* key, T def) {
  auto it = obj.find(key);
  return it == obj.end() ? def : integer<T>(*it);
}

std::vector<uint32_t> integers32(const json& a) {
  if (!a.is_array()) throw json::type_error::create(302, std::string("expected an array, got ") + a.type_name(), &a);
  std::vector<uint32_t> out;
  for (auto& v : a) out.push_back(integer<uint32_t>(v));
  return out;
}

/// Milliseconds from an org.sbx.*-ms annotation: decimal digits only.
std::chrono::milliseconds annotation_ms(const std::string& key, const std::string& val) {
  int64_t ms = 0;
  auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), ms);
  if (ec != std::errc() || ptr != val.data() + val.size() || ms < 0)
    throw Error("config.json: annotation " + key + " must be a number of milliseconds, not '" + val + "'");
  return std::chrono::milliseconds(ms);
}

json id_maps(const std::vector<IdMapping>& maps) {
  json a = json::array();
  for (auto& m : maps) a.push_back({{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}});
  return a;
}

std::vector<IdMapping> parse_id_maps(const json& a) {
  std::vector<IdMapping> out;
  for (auto& m : a) out.push_back({integer<uint32_t>(m.at("containerID")), integer<uint32_t>(m.at("hostID")), integer<uint32_t>(m.at("size"))});
  return out;
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

SandboxSpec from_runtime_config(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error("config.json is not a JSON object");
  SandboxSpec s;
  std::string field;
  try {
    field = "process";
    const json& p = j.at("process");
    field = "process.args";
    s.process.args = p.at("args").get<std::vector<std::string>>();
    if (s.process.args.empty()) throw Error("config.json: process.args is empty");
    field = "process.env";
    if (p.contains("env")) s.process.env = p["env"].get<std::vector<std::string>>();
    field = "process.cwd";
    s.process.cwd = p.value("cwd", "/");
    field = "process.terminal";
    s.process.terminal = p.value("terminal", false);
    field = "process.user";
    if (p.contains("user")) {
      const json& u = p["user"];
      s.process.uid = integer_or<uint32_t>(u, "uid", 0);
      s.process.gid = integer_or<uint32_t>(u, "gid", 0);
      if (u.contains("additionalGids")) s.process.additional_gids = integers32(u["additionalGids"]);
      s.process.user = u.value("username", "");
    }
    field = "process.capabilities";
    if (p.contains("capabilities") && p["capabilities"].contains("bounding")) {
      s.process.capabilities = p["capabilities"]["bounding"].get<std::vector<std::string>>();
    } else {
      s.process.capabilities.clear();
    }
    field = "process.noNewPrivileges";
    s.process.no_new_privileges = p.value("noNewPrivileges", false);
    field = "process.rlimits";
    if (p.contains("rlimits")) {
      for (auto& r : p["rlimits"]) s.process.rlimits.push_back({r.at("type").get<std::string>(), integer<uint64_t>(r.at("soft")), integer<uint64_t>(r.at("hard"))});
    }
    field = "root";
    if (j.contains("root")) s.readonly_rootfs = j["root"].value("readonly", false);
    field = "hostname";
    s.hostname = j.value("hostname", "");
    field = "mounts";
    if (j.contains("mounts")) {
      for (auto& m : j["mounts"]) {
        std::string dest = m.at("destination").get<std::string>();
        if (is_default_mount(dest)) continue;
        Mount mt{dest, m.value("type", ""), m.value("source", ""), {}};
        if (m.contains("options")) mt.options = m["options"].get<std::vector<std::string>>();
        s.mounts.push_back(std::move(mt));
      }
    }
    field = "hooks.createContainer";
    if (j.contains("hooks") && j["hooks"].contains("createContainer")) {
      for (auto& h : j["hooks"]["createContainer"]) {
        Hook hk{h.at("path").get<std::string>(), {}, {}, {}};
        if (h.contains("args")) hk.args = h["args"].get<std::vector<std::string>>();
        if (h.contains("env")) hk.env = h["env"].get<std::vector<std::string>>();
        if (h.contains("timeout")) hk.timeout_s = integer<int>(h["timeout"]);
        s.create_container_hooks.push_back(std::move(hk));
      }
    }
    field = "linux";
    s.network = NetworkMode::Host;
    if (j.contains("linux")) {
      const json& l = j["linux"];
      field = "linux.namespaces";
      if (l.contains("namespaces")) {
        for (auto& n : l["namespaces"]) {
          if (n.at("type") == "network") s.network = NetworkMode::None;
        }
      }
      field = "linux.uidMappings";
      if (l.contains("uidMappings")) s.uid_mappings = parse_id_maps(l["uidMappings"]);
      field = "linux.gidMappings";
      if (l.contains("gidMappings")) s.gid_mappings = parse_id_maps(l["gidMappings"]);
      field = "linux.resources";
      if (l.contains("resources")) {
        const json& r = l["resources"];
        if (r.contains("memory") && r["memory"].contains("limit")) s.resources.memory_bytes = integer<int64_t>(r["memory"]["limit"]);
        if (r.contains("cpu") && r["cpu"].contains("quota") && r["cpu"].contains("period")) {
          {
            int64_t period = integer<int64_t>(r["cpu"]["period"]);
            if (period <= 0) throw Error("config.json: linux.resources.cpu.period must be positive");
            s.resources.cpus = static_cast<double>(integer<int64_t>(r["cpu"]["quota"])) / static_cast<double>(period);
          }
        }
        if (r.contains("pids") && r["pids"].contains("limit")) s.resources.pids_limit = integer<int64_t>(r["pids"]["limit"]);
        if (r.contains("devices")) {
          bool first = true;
          for (auto& d : r["devices"]) {
            DeviceRule rule;
            rule.allow = d.value("allow", false);
            std::string t = d.value("type", "a");
            rule.type = t.empty() ? 'a' : t[0];
            rule.major = integer_or<int64_t>(d, "major", -1);
            rule.minor = integer_or<int64_t>(d, "minor", -1);
            rule.access = d.value("access", "rwm");
            // The leading "deny all" is what to_runtime_config always writes.
            if (first && !rule.allow && rule.type == 'a' && rule.major < 0 && rule.minor < 0) {
              first = false;
              continue;
            }
            first = false;
            s.resources.devices.push_back(rule);
          }
        }
      }
      field = "linux.devices";
      if (l.contains("devices")) {
        for (auto& d : l["devices"]) {
          DeviceNode n;
          n.path = d.at("path").get<std::string>();
          std::string t = d.value("type", "c");
          n.type = t.empty() ? 'c' : t[0];
          n.major = integer_or<int64_t>(d, "major", 0);
          n.minor = integer_or<int64_t>(d, "minor", 0);
          n.file_mode = integer_or<uint32_t>(d, "fileMode", 0666);
          n.uid = integer_or<uint32_t>(d, "uid", 0);
          n.gid = integer_or<uint32_t>(d, "gid", 0);
          s.devices.push_back(n);
        }
      }
    }
    field = "annotations";
    if (j.contains("annotations")) {
      const std::string pre = kAnnotationPrefix;
      for (auto& [k, v] : j["annotations"].items()) {
        std::string val = v.get<std::string>();
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
            throw Error("config.json: annotation " + k + " must be a number of bytes, not '" + val + "'");
        }
        else if (key.rfind("label.", 0) == 0) s.labels[key.substr(6)] = val;
        else s.annotations[k] = val;
      }
    }
  } catch (const json::exception& e) {
    throw Error("config.json: field " + field + " is malformed: " + e.what());
  }
  return s;
}

}  // namespace sbx::oci
