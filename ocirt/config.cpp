#include "ocirt/config.h"

#include <set>

#include "common/error.h"
#include "common/log.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/rlimits.h"

namespace sbx::ocirt {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error("config.json: " + field + ": " + why);
}

// process.capabilities.<set>: since runtime-spec 1.1 a name the kernel (or
// libcap) does not know "MUST be logged as a warning by the runtime" and must
// not fail the container; it is left out.
void drop_unknown_capabilities(std::vector<std::string>& names, const std::string& where) {
  std::vector<std::string> known;
  for (auto& name : names) {
    try {
      runtime::parse_capabilities({name});
      known.push_back(std::move(name));
    } catch (const Error&) {
      log::warn(where + ": unknown capability '" + name + "' ignored");
    }
  }
  names = std::move(known);
}

void check_process(Process& p, const std::string& w) {
  if (p.args.empty()) bad(w + ".args", "must name the program to run");
  if (p.cwd.empty() || p.cwd[0] != '/') bad(w + ".cwd", "must be an absolute path");
  auto& c = p.capabilities;
  for (auto [set, name] : {std::pair{&c.bounding, "bounding"}, {&c.effective, "effective"}, {&c.permitted, "permitted"},
                           {&c.inheritable, "inheritable"}, {&c.ambient, "ambient"}})
    drop_unknown_capabilities(*set, w + ".capabilities." + name);
  // config.md: "The runtime MUST generate an error for any values which
  // cannot be mapped to a relevant kernel interface."
  for (size_t i = 0; i < p.rlimits.size(); ++i) {
    try {
      runtime::check_rlimit(p.rlimits[i]);
    } catch (const Error& e) {
      bad(w + ".rlimits", e.what());
    }
    for (size_t k = 0; k < i; ++k)
      if (p.rlimits[k].type == p.rlimits[i].type) bad(w + ".rlimits", "'" + p.rlimits[i].type + "' is listed twice");
  }
}

void check_resources(const Resources& r) {
  const std::string w = "linux.resources";
  if (r.swappiness && *r.swappiness > 100) bad(w + ".memory.swappiness", "must be 0 to 100");
  for (const auto& d : r.devices)
    if (std::string("acb").find(d.type) == std::string::npos) bad(w + ".devices.type", "must be a, c or b");
}

// Fields the spec defines that sbx-runc cannot honour, when given.
void refuse_unsupported(const Config& c) {
  for (const auto& f : c.unsupported) {
    // Kernel memory limits are gone from the kernel (memory.kmem.limit_in_bytes,
    // removed in Linux 6.0); runc ignores linux.resources.memory.kernel too.
    if (f == "linux.resources.memory.kernel") {
      log::warn("config.json: " + f + ": kernel memory limits are not supported by this kernel; ignored (as runc)");
      continue;
    }
    if (f == "process.apparmorProfile") bad(f, "AppArmor profiles are not applied by sbx-runc");
    if (f == "process.selinuxLabel") bad(f, "SELinux labels are not applied by sbx-runc");
    bad(f, "not supported by sbx-runc");
  }
}

}  // namespace

Process parse_process(std::string_view json_text, const std::string& where) {
  Process p = oci::parse_runtime_process(json_text, where);
  check_process(p, where.empty() ? "process" : where);
  return p;
}

Resources parse_resources(std::string_view json_text) {
  Resources r = oci::parse_runtime_resources(json_text);
  check_resources(r);
  return r;
}

Config parse_config(std::string_view json_text, const std::string& bundle) {
  Config c = oci::parse_runtime_config(json_text, bundle);
  refuse_unsupported(c);
  if (!c.has_process) bad("process", "missing (sbx-runc runs one process per container)");
  check_process(c.process, "process");
  if (!c.has_root) bad("root", "missing");
  if (c.root_path.empty()) bad("root.path", "missing");
  for (auto& m : c.mounts) {
    if (m.destination.empty() || m.destination[0] != '/') bad("mounts.destination", "'" + m.destination + "' must be an absolute path");
    if (!m.type.empty()) continue;
    bool bind = false;
    for (const auto& o : m.options) bind |= (o == "bind" || o == "rbind");
    if (!bind) bad("mounts[" + m.destination + "].type", "missing (only bind mounts may leave it out)");
    m.type = "bind";
  }
  for (auto* stage : {&c.hooks.prestart, &c.hooks.create_runtime, &c.hooks.create_container, &c.hooks.start_container,
                      &c.hooks.poststart, &c.hooks.poststop})
    for (const auto& h : *stage) {
      if (h.path.empty() || h.path[0] != '/') bad("hooks.path", "'" + h.path + "' must be an absolute path");
      if (h.timeout_s && *h.timeout_s <= 0) bad("hooks.timeout", "must be positive");
    }
  if (!c.has_linux) bad("linux", "missing (sbx-runc runs Linux containers)");
  if (!c.mount_label.empty()) bad("linux.mountLabel", "SELinux labels are not applied by sbx-runc");
  static const std::set<std::string> kNs = {"pid", "network", "mount", "ipc", "uts", "user", "cgroup"};
  for (size_t i = 0; i < c.namespaces.size(); ++i) {
    const Namespace& ns = c.namespaces[i];
    if (!kNs.count(ns.type)) bad("linux.namespaces.type", "'" + ns.type + "' is not supported by sbx-runc");
    for (size_t k = 0; k < i; ++k)
      if (c.namespaces[k].type == ns.type) bad("linux.namespaces", "'" + ns.type + "' is listed twice");
    if (ns.type == "user" && !ns.path.empty())
      bad("linux.namespaces[user].path", "joining a user namespace by path is not supported by sbx-runc");
  }
  // A mount namespace joined by path gets the root built in it, as runc
  // does (config-linux.md: the process is placed in that namespace); with
  // none listed the container would share sbx-runc's own mounts.
  if (!c.find_namespace("mount")) bad("linux.namespaces", "sbx-runc needs a mount namespace (type \"mount\", new or by path)");
  const Namespace* user = c.find_namespace("user");
  if (user && (c.uid_mappings.empty() || c.gid_mappings.empty()))
    bad("linux.uidMappings", "a new user namespace needs uidMappings and gidMappings");
  if (!user && (!c.uid_mappings.empty() || !c.gid_mappings.empty()))
    bad("linux.uidMappings", "id mappings need a new user namespace in linux.namespaces");
  for (auto& d : c.devices) {
    if (d.type != 'c' && d.type != 'b' && d.type != 'u' && d.type != 'p') bad("linux.devices[" + d.path + "].type", "must be c, b, u or p");
    // "u" (unbuffered character) is a character device to mknod(2); "p" a FIFO.
    if (d.type == 'u') d.type = 'c';
  }
  check_resources(c.resources);
  static const std::set<std::string> kPropagation = {"",       "private", "rprivate",   "slave",      "rslave",
                                                     "shared", "rshared", "unbindable", "runbindable"};
  if (!kPropagation.count(c.rootfs_propagation))
    bad("linux.rootfsPropagation", "'" + c.rootfs_propagation + "' is not a mount propagation (shared, slave, private, unbindable)");
  if (c.seccomp && c.seccomp->default_action.empty()) bad("linux.seccomp.defaultAction", "missing");
  return c;
}

}  // namespace sbx::ocirt
