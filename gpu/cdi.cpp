#include "gpu/cdi.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "gpu/devnode.h"
#include "gpu/yaml_json.h"

namespace sbx::gpu {

using nlohmann::json;

namespace {

const std::set<std::string> kVersions = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0"};

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// CDI name rules (pkg/parser): alphanumeric at both ends, `extra` allowed inside.
bool valid_part(const std::string& s, std::string_view extra) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || extra.find(c) != std::string_view::npos; });
}

bool valid_kind(const std::string& kind) {
  auto slash = kind.find('/');
  if (slash == std::string::npos) return false;
  std::string vendor = kind.substr(0, slash), cls = kind.substr(slash + 1);
  return valid_part(vendor, "-_.") && valid_part(cls, "-_");
}

bool valid_device_name(const std::string& n) { return valid_part(n, "-_.:"); }

// Typed field access with errors that name the file and the JSON path.
struct Reader {
  const std::string& file;
  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Error("CDI spec " + file + ": " + where + ": " + why);
  }
  std::string str(const json& o, const char* key, const std::string& where, bool required) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (required) fail(where, std::string("missing \"") + key + "\"");
      return "";
    }
    if (!it->is_string()) fail(where + "." + key, "must be a string");
    return it->get<std::string>();
  }
  std::vector<std::string> strs(const json& o, const char* key, const std::string& where) const {
    std::vector<std::string> out;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return out;
    if (!it->is_array()) fail(where + "." + key, "must be a list of strings");
    for (const auto& v : *it) {
      if (!v.is_string()) fail(where + "." + key, "must be a list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  template <class T>
  std::optional<T> num(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer()) fail(where + "." + key, "must be an integer");
    auto v = it->get<int64_t>();
    if (v < 0) fail(where + "." + key, "must not be negative");
    return static_cast<T>(v);
  }
  const json& list(const json& o, const char* key, const std::string& where) const {
    static const json empty = json::array();
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return empty;
    if (!it->is_array()) fail(where + "." + key, "must be a list");
    return *it;
  }

  CdiEdits edits(const json& parent, const std::string& where) const {
    CdiEdits e;
    auto it = parent.find("containerEdits");
    if (it == parent.end() || it->is_null()) return e;
    const json& ce = *it;
    std::string w = where + ".containerEdits";
    if (!ce.is_object()) fail(w, "must be an object");
    for (const char* unsupported : {"intelRdt", "netDevices"})
      if (ce.contains(unsupported) && !ce[unsupported].is_null())
        fail(w + "." + unsupported, "is not supported by sbx");
    e.env = strs(ce, "env", w);
    for (const auto& v : e.env)
      if (v.find('=') == std::string::npos || v.front() == '=') fail(w + ".env", "'" + v + "' is not KEY=VALUE");
    size_t i = 0;
    for (const auto& d : list(ce, "deviceNodes", w)) {
      std::string dw = w + ".deviceNodes[" + std::to_string(i++) + "]";
      if (!d.is_object()) fail(dw, "must be an object");
      CdiDeviceNode n;
      n.path = str(d, "path", dw, true);
      if (n.path.empty() || n.path.front() != '/') fail(dw + ".path", "must be an absolute path");
      n.host_path = str(d, "hostPath", dw, false);
      if (n.host_path.empty()) n.host_path = n.path;
      n.type = str(d, "type", dw, false);
      if (!n.type.empty() && n.type != "c" && n.type != "b" && n.type != "u" && n.type != "p")
        fail(dw + ".type", "must be \"c\", \"b\", \"u\" or \"p\"");
      if (n.type == "u") n.type = "c";
      n.major = num<int64_t>(d, "major", dw);
      n.minor = num<int64_t>(d, "minor", dw);
      n.file_mode = num<uint32_t>(d, "fileMode", dw);
      n.permissions = str(d, "permissions", dw, false);
      if (n.permissions.find_first_not_of("rwm") != std::string::npos)
        fail(dw + ".permissions", "must be a combination of r, w and m");
      n.uid = num<uint32_t>(d, "uid", dw);
      n.gid = num<uint32_t>(d, "gid", dw);
      e.device_nodes.push_back(std::move(n));
    }
    i = 0;
    for (const auto& m : list(ce, "mounts", w)) {
      std::string mw = w + ".mounts[" + std::to_string(i++) + "]";
      if (!m.is_object()) fail(mw, "must be an object");
      CdiMount x;
      x.host_path = str(m, "hostPath", mw, true);
      x.container_path = str(m, "containerPath", mw, true);
      if (x.container_path.empty() || x.container_path.front() != '/') fail(mw + ".containerPath", "must be an absolute path");
      x.type = str(m, "type", mw, false);
      x.options = strs(m, "options", mw);
      e.mounts.push_back(std::move(x));
    }
    i = 0;
    for (const auto& h : list(ce, "hooks", w)) {
      std::string hw = w + ".hooks[" + std::to_string(i++) + "]";
      if (!h.is_object()) fail(hw, "must be an object");
      CdiHook x;
      x.hook_name = str(h, "hookName", hw, true);
      x.path = str(h, "path", hw, true);
      x.args = strs(h, "args", hw);
      x.env = strs(h, "env", hw);
      if (auto t = num<int>(h, "timeout", hw)) x.timeout_s = *t;
      static const std::set<std::string> known = {"prestart", "createRuntime", "createContainer", "startContainer",
                                                  "poststart", "poststop"};
      if (!known.count(x.hook_name)) fail(hw + ".hookName", "unknown hook '" + x.hook_name + "'");
      if (x.hook_name != "createContainer")
        fail(hw + ".hookName", "'" + x.hook_name + "' hooks are not supported by sbx (only createContainer)");
      e.hooks.push_back(std::move(x));
    }
    auto gids = list(ce, "additionalGids", w);
    for (const auto& g : gids) {
      if (!g.is_number_integer() || g.get<int64_t>() < 0) fail(w + ".additionalGids", "must be a list of group ids");
      e.additional_gids.push_back(g.get<uint32_t>());
    }
    return e;
  }
};

bool ends_with(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

void apply_edits(const CdiEdits& e, const std::string& origin, const HostRoot& root, SandboxSpec& spec) {
  for (const auto& kv : e.env) {
    auto eq = kv.find('=');
    set_env(spec, kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& n : e.device_nodes) {
    DeviceNode d;
    if (n.type == "p" || (n.type.size() == 1 && n.major && n.minor)) {
      d.path = n.path;
      d.type = n.type[0];
      d.major = n.major.value_or(0);
      d.minor = n.minor.value_or(0);
      d.file_mode = n.file_mode.value_or(0666);
    } else {
      try {
        d = stat_device_node(root.join(n.host_path), n.path);
      } catch (const Error& err) {
        throw Error(std::string(err.what()) + " (needed by " + origin + ")", err.err());
      }
      if (!n.type.empty() && n.type[0] != d.type)
        throw Error(origin + ": device node " + n.host_path + " is type '" + std::string(1, d.type) +
                    "' on the host, the spec says '" + n.type + "'");
      if (n.major) d.major = *n.major;
      if (n.minor) d.minor = *n.minor;
      if (n.file_mode) d.file_mode = *n.file_mode & 07777;
    }
    d.uid = n.uid.value_or(0);
    d.gid = n.gid.value_or(0);
    if (d.type == 'p') {
      // A FIFO needs no device-cgroup rule.
      auto it = std::find_if(spec.devices.begin(), spec.devices.end(), [&](const DeviceNode& x) { return x.path == d.path; });
      if (it != spec.devices.end()) *it = d; else spec.devices.push_back(d);
    } else {
      add_device(spec, d, n.permissions.empty() ? "rwm" : n.permissions);
    }
  }
  for (const auto& m : e.mounts) {
    Mount x{m.container_path, m.type.empty() ? "bind" : m.type, root.join(m.host_path), m.options};
    if (x.type == "bind" && std::find(x.options.begin(), x.options.end(), "bind") == x.options.end() &&
        std::find(x.options.begin(), x.options.end(), "rbind") == x.options.end())
      x.options.insert(x.options.begin(), "bind");
    spec.mounts.push_back(std::move(x));
  }
  for (const auto& h : e.hooks) spec.create_container_hooks.push_back(Hook{h.path, h.args, h.env, h.timeout_s});
  for (auto g : e.additional_gids)
    if (std::find(spec.process.additional_gids.begin(), spec.process.additional_gids.end(), g) ==
        spec.process.additional_gids.end())
      spec.process.additional_gids.push_back(g);
}

}  // namespace

CdiSpec parse_cdi_spec(std::string_view text, const std::string& file) {
  json doc;
  if (ends_with(file, ".yaml") || ends_with(file, ".yml")) {
    doc = yaml_to_json(text, "CDI spec " + file);
  } else {
    try {
      doc = json::parse(text);
    } catch (const json::parse_error& e) {
      throw Error(ErrorKind::InvalidArgument, "CDI spec " + file + ": invalid JSON: " + e.what());
    }
  }
  Reader r{file};
  if (!doc.is_object()) r.fail("top level", "must be an object");
  CdiSpec s;
  s.file = file;
  s.version = r.str(doc, "cdiVersion", "top level", true);
  if (!kVersions.count(s.version))
    r.fail("cdiVersion", "unsupported version '" + s.version + "' (sbx reads 0.3.0 to 0.8.0)");
  s.kind = r.str(doc, "kind", "top level", true);
  if (!valid_kind(s.kind)) r.fail("kind", "'" + s.kind + "' is not \"vendor/class\" (e.g. nvidia.com/gpu)");
  s.edits = r.edits(doc, "top level");
  const json& devs = r.list(doc, "devices", "top level");
  if (devs.empty()) r.fail("devices", "a spec must define at least one device");
  std::set<std::string> names;
  size_t i = 0;
  for (const auto& d : devs) {
    std::string w = "devices[" + std::to_string(i++) + "]";
    if (!d.is_object()) r.fail(w, "must be an object");
    CdiDevice dev;
    dev.name = r.str(d, "name", w, true);
    if (!valid_device_name(dev.name)) r.fail(w + ".name", "'" + dev.name + "' is not a valid device name");
    if (!names.insert(dev.name).second) r.fail(w + ".name", "device '" + dev.name + "' is defined twice");
    dev.edits = r.edits(d, w);
    s.devices.push_back(std::move(dev));
  }
  return s;
}

std::pair<std::string, std::string> parse_qualified_name(const std::string& q) {
  auto eq = q.find('=');
  if (eq == std::string::npos)
    throw Error("'" + q + "' is not a CDI device name: expected vendor/class=name (e.g. nvidia.com/gpu=0)");
  std::string kind = q.substr(0, eq), name = q.substr(eq + 1);
  if (!valid_kind(kind)) throw Error("'" + q + "': '" + kind + "' is not a valid CDI kind (vendor/class)");
  if (!valid_device_name(name)) throw Error("'" + q + "': '" + name + "' is not a valid CDI device name");
  return {kind, name};
}

bool is_cdi_name(const std::string& arg) {
  return !arg.empty() && arg.front() != '/' && arg.find('=') != std::string::npos && arg.find('/') != std::string::npos;
}

const std::vector<std::string>& CdiRegistry::default_dirs() {
  static const std::vector<std::string> d = {"/etc/cdi", "/var/run/cdi"};
  return d;
}

CdiRegistry CdiRegistry::load(const HostRoot& root, const std::vector<std::string>& dirs) {
  CdiRegistry reg;
  for (size_t p = 0; p < dirs.size(); ++p) {
    std::string dir = root.join(dirs[p]);
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    std::vector<std::string> files;
    while (auto* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (ends_with(n, ".json") || ends_with(n, ".yaml") || ends_with(n, ".yml")) files.push_back(n);
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string shown = dirs[p] + "/" + f;
      try {
        std::string text = fs::read_file(dir + "/" + f);
        if (text.size() > (16u << 20)) throw Error("CDI spec " + shown + ": larger than 16 MiB");
        reg.specs_.push_back(parse_cdi_spec(text, shown));
        reg.priority_.push_back(p);
      } catch (const Error& e) {
        reg.errors_.push_back(e.what());
      }
    }
  }
  return reg;
}

std::vector<std::string> CdiRegistry::device_names() const {
  std::set<std::string> out;
  for (const auto& s : specs_)
    for (const auto& d : s.devices) out.insert(s.kind + "=" + d.name);
  return {out.begin(), out.end()};
}

void CdiRegistry::apply(const std::vector<std::string>& names, const HostRoot& root, SandboxSpec& spec) const {
  // Resolve every name first, so a bad one leaves `spec` untouched.
  std::vector<Entry> chosen;
  auto unreadable = [&] {
    std::string s;
    for (const auto& e : errors_) s += "\n  (unreadable: " + e + ")";
    return s;
  };
  for (const auto& q : names) {
    auto [kind, name] = parse_qualified_name(q);
    std::vector<Entry> found;
    bool kind_known = false;
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (specs_[i].kind != kind) continue;
      kind_known = true;
      for (const auto& d : specs_[i].devices)
        if (d.name == name) found.push_back({&specs_[i], &d, priority_[i]});
    }
    if (!kind_known) {
      std::set<std::string> kinds;
      for (const auto& s : specs_) kinds.insert(s.kind);
      std::string list;
      for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
      throw Error("unknown CDI device " + q + ": no spec of kind " + kind + " in /etc/cdi or /var/run/cdi" +
                  (list.empty() ? std::string(" (no CDI specs found)") : " (kinds found: " + list + ")") +
                  "; generate one, e.g. 'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml'" + unreadable());
    }
    if (found.empty() && name == "all") {
      // "all" without an explicit device: every device of the kind, from the
      // highest-priority spec that defines each name.
      std::map<std::string, Entry> best;
      for (size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].kind == kind)
          for (const auto& d : specs_[i].devices) {
            auto it = best.find(d.name);
            if (it == best.end() || it->second.priority <= priority_[i]) best[d.name] = {&specs_[i], &d, priority_[i]};
          }
      for (auto& [n, e] : best) chosen.push_back(e);
      continue;
    }
    if (found.empty()) {
      std::string list;
      for (const auto& s : specs_)
        if (s.kind == kind)
          for (const auto& d : s.devices) list += (list.empty() ? "" : ", ") + d.name;
      throw Error("unknown CDI device " + q + ": kind " + kind + " has devices " + list + unreadable());
    }
    size_t top = 0;
    for (const auto& f : found) top = std::max(top, f.priority);
    std::vector<Entry> at_top;
    for (const auto& f : found)
      if (f.priority == top) at_top.push_back(f);
    if (at_top.size() > 1)
      throw Error("CDI device " + q + " is defined in both " + at_top[0].spec->file + " and " + at_top[1].spec->file +
                  "; remove one of them");
    chosen.push_back(at_top[0]);
  }
  SandboxSpec out = spec;  // all-or-nothing: a missing host node leaves `spec` unchanged
  std::set<const CdiSpec*> spec_edits_done;
  std::set<const CdiDevice*> devices_done;
  for (const auto& e : chosen) {
    if (!devices_done.insert(e.device).second) continue;
    if (spec_edits_done.insert(e.spec).second) apply_edits(e.spec->edits, e.spec->file, root, out);
    apply_edits(e.device->edits, e.spec->file + " device " + e.device->name, root, out);
  }
  spec = std::move(out);
}

void apply_host_device(const std::string& arg, const HostRoot& root, SandboxSpec& spec) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (true) {
    size_t j = arg.find(':', i);
    parts.push_back(arg.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  auto is_perm = [](const std::string& s) { return !s.empty() && s.find_first_not_of("rwm") == std::string::npos; };
  std::string host = parts[0], inside = parts[0], perms = "rwm";
  if (parts.size() == 2) {
    if (is_perm(parts[1]))
      perms = parts[1];
    else
      inside = parts[1];
  } else if (parts.size() == 3) {
    inside = parts[1];
    perms = parts[2];
    if (!is_perm(perms)) throw Error(ErrorKind::InvalidArgument,
                "--device " + arg + ": access '" + perms + "' must be a combination of r, w and m");
  } else if (parts.size() > 3) {
    throw Error("--device " + arg + ": expected /dev/HOST[:/dev/SANDBOX][:rwm]");
  }
  if (host.empty() || host.front() != '/' || inside.empty() || inside.front() != '/')
    throw Error(ErrorKind::InvalidArgument,
                "--device " + arg + ": device paths must be absolute (or use a CDI name vendor/class=name)");
  add_device(spec, stat_device_node(root.join(host), inside), perms);
}

}  // namespace sbx::gpu
