// SandboxOptions → the engine's request (engine/sandbox_options.h).
#include "engine/sandbox_options.h"

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/error.h"
#include "common/text.h"
#include "runtime/backends.h"
#include "runtime/default_bounds.h"
#include "runtime/image_config.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/rlimits.h"
#include "engine/network_choice.h"
#include "runtime/linux/sandbox_network.h"
#include "runtime/state.h"

namespace sbx::engine {

namespace {

/// "net_admin" → "CAP_NET_ADMIN"; "ALL" stays.
std::string cap_name(std::string c) {
  for (auto& ch : c) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return c == "ALL" || c.rfind("CAP_", 0) == 0 ? c : "CAP_" + c;
}

void apply_caps(const SandboxOptions& o, std::vector<std::string>& caps) {
  for (const auto& d : o.cap_drop) {
    std::string n = cap_name(d);
    if (n == "ALL") {
      caps.clear();
      continue;
    }
    runtime::parse_capabilities({n});  // an unknown name is an error, as in docker
    caps.erase(std::remove(caps.begin(), caps.end(), n), caps.end());
  }
  for (const auto& a : o.cap_add) {
    std::string n = cap_name(a);
    if (n == "ALL")
      throw Error(ErrorKind::Unsupported, o.names.cap_add + " ALL is not supported by sbx: name the capabilities to add");
    runtime::parse_capabilities({n});
    if (std::find(caps.begin(), caps.end(), n) == caps.end()) caps.push_back(n);
  }
}

}  // namespace

Mount parse_volume(const std::string& text, const std::string& what) {
  std::vector<std::string> parts = split(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
    throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + text + "': expected HOST-DIR:CONTAINER-DIR[:ro]");
  if (is_volume_source(parts[0])) return parse_volume_mount(text, what);
  if (parts[0][0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text +
                                                "': the host path must be absolute (or a volume NAME)");
  if (parts[1][0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': the container path must be absolute");
  char* real = ::realpath(parts[0].c_str(), nullptr);
  if (!real) throw_errno(what + " source " + parts[0]);
  Mount m{parts[1], "bind", real, {"rbind"}};
  ::free(real);
  if (parts.size() == 3) {
    for (const auto& o : split(parts[2], ',')) {
      if (o == "ro" || o == "nosuid" || o == "nodev" || o == "noexec") {
        m.options.push_back(o);
      } else if (o == "rw" || o == "z" || o == "Z" || o == "rprivate" || o == "private") {
        // the default (rw; sbx's mounts are private), or SELinux labels sbx has no use for
      } else if (o == "idmap=host") {
        m.options.push_back(o);  // opt-in: sandbox ids are host ids on disk (runtime/linux/userns.h)
      } else {
        throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': unknown option '" + o +
                                                    "' (ro, rw, nosuid, nodev, noexec, idmap=host)");
      }
    }
  }
  return m;
}

Mount parse_tmpfs(const std::string& text, const std::string& what) {
  auto colon = text.find(':');
  std::string dest = text.substr(0, colon);
  if (dest.empty() || dest[0] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': the path must be absolute");
  // podman's defaults; the user's options come after and win.
  Mount m{dest, "tmpfs", "tmpfs", {"nosuid", "nodev", "noexec"}};
  if (colon != std::string::npos && colon + 1 < text.size()) {
    for (const auto& o : split(text.substr(colon + 1), ',')) {
      if (o == "exec") {
        std::erase(m.options, "noexec");
      } else if (o == "suid" || o == "dev" || o == "rw") {
        std::erase(m.options, "no" + (o == "rw" ? std::string("rw") : o));
      } else if (o.rfind("size=", 0) == 0 || o.rfind("mode=", 0) == 0 || o.rfind("uid=", 0) == 0 ||
                 o.rfind("gid=", 0) == 0 || o == "ro" || o == "noexec" || o == "nosuid" || o == "nodev" ||
                 o.rfind("nr_inodes=", 0) == 0) {
        m.options.push_back(o);
      } else {
        throw Error(ErrorKind::InvalidArgument, "invalid " + what + " '" + text + "': unknown option '" + o + "'");
      }
    }
  }
  return m;
}

ResolvedImage resolve_image(Engine& engine, const SandboxOptions& o) {
  ResolvedImage r;
  if (!o.rootfs.empty()) {
    char* real = ::realpath(o.rootfs.c_str(), nullptr);
    if (!real) throw_errno("--rootfs " + o.rootfs);
    r.layer_dirs = {real};
    r.ref = real;
    ::free(real);
    return r;
  }
  if (o.image.empty())
    throw Error(ErrorKind::InvalidArgument, "sbx " + o.names.command + " needs an IMAGE (or --rootfs DIR); see 'sbx " +
                                                o.names.command + " --help'");
  return resolved(engine, engine.resolve_or_pull(o.image, o.pull, o.pull_explicit, o.pull_options), o.image);
}

ResolvedImage resolved(Engine& engine, const oci::ImageRecord& img, const std::string& ref) {
  return ResolvedImage{ref, img.id, img.config, engine.layer_dirs(img)};
}

namespace {

/// The backend `o` asks for (Docker's "runc"/"runsc" mapped, empty: the
/// default), checked against the registry. Throws sbx::Error on an unknown name.
std::string chosen_runtime(const SandboxOptions& o, const std::string& default_runtime) {
  std::string rt = o.runtime;
  if (rt.empty() || rt == "runc") rt = default_runtime.empty() ? runtime::default_backend_name() : default_runtime;
  rt = runtime::backend_name_for_runtime(rt);  // Docker's "runsc"
  runtime::validate_backend_name(rt);  // the registry knows the names
  return rt;
}

}  // namespace

RunRequest build_sandbox(Engine& engine, const SandboxOptions& o, const std::string& default_runtime,
                         std::vector<std::string>* warnings) {
  chosen_runtime(o, default_runtime);  // a wrong backend name is refused before anything is pulled
  return build_sandbox(o, resolve_image(engine, o), default_runtime, warnings);
}

RunRequest build_sandbox(const SandboxOptions& o, const ResolvedImage& image, const std::string& default_runtime,
                         std::vector<std::string>* warnings) {
  RunRequest req;
  SandboxSpec& spec = req.spec;
  spec.id = o.id.empty() ? runtime::new_sandbox_id() : o.id;
  spec.name = o.name;
  spec.labels = o.labels;

  spec.runtime = chosen_runtime(o, default_runtime);

  spec.image_ref = image.ref;
  spec.image_id = image.id;
  spec.layer_dirs = image.layer_dirs;
  spec.hostname = o.hostname.empty() ? spec.id.substr(0, 12) : o.hostname;

  runtime::ProcessOverrides po;
  po.command = o.command;
  po.entrypoint = o.entrypoint;
  for (const auto& file : o.env_files)
    for (auto& kv : runtime::parse_env_file(file)) po.env.push_back(kv);
  for (const auto& e : o.env)
    if (auto kv = runtime::expand_env_arg(e)) po.env.push_back(*kv);
  po.workdir = o.workdir;
  po.user = o.user;
  po.terminal = o.terminal;
  // Without a command the sandbox just holds: the image's Cmd is not run.
  // "true" satisfies apply_image_config (an image may have no Cmd at all);
  // the args are cleared after.
  bool hold_only = o.hold_without_command && o.command.empty() && !o.entrypoint;
  if (hold_only) po.command = {"true"};
  runtime::apply_image_config(spec, image.config, po);
  if (hold_only) spec.process.args.clear();
  spec.stdin_open = o.stdin_open;
  spec.process.capabilities = default_capabilities();
  apply_caps(o, spec.process.capabilities);
  spec.readonly_rootfs = o.read_only;

  if (o.network.empty()) {
    spec.network = NetworkMode::None;
  } else {
    try {
      apply_network_choice(spec, o.network, o.network_aliases, o.ip);
      for (const auto& e : o.network_endpoints) {
        auto it = std::find_if(spec.net.networks.begin(), spec.net.networks.end(),
                               [&e](const NetworkAttachment& a) { return a.network == e.network; });
        if (it == spec.net.networks.end())
          throw Error(ErrorKind::InvalidArgument, "invalid --network: an endpoint on network '" + e.network +
                                                      "' needs that network among the chosen ones ('" + o.network + "')");
        it->aliases.insert(it->aliases.end(), e.aliases.begin(), e.aliases.end());
        if (!e.ip.empty()) {
          if (!it->ip.empty() && it->ip != e.ip)
            throw Error(ErrorKind::InvalidArgument, "invalid --network: two addresses (" + it->ip + ", " + e.ip +
                                                        ") asked for on network '" + e.network + "'");
          it->ip = e.ip;
        }
      }
    } catch (const Error& e) {
      // The front end's name for the field ("--network", "HostConfig.NetworkMode").
      std::string m = e.what();
      if (o.names.network != "--network" && m.rfind("invalid --network", 0) == 0)
        m = "invalid " + o.names.network + m.substr(std::string("invalid --network").size());
      throw Error(e, m);
    }
  }
  spec.net.allow_egress = o.allow_egress;
  spec.net.deny_egress = o.deny_egress;
  spec.net.dns = o.dns;
  for (const auto& p : o.publish) spec.net.publish.push_back(runtime::parse_publish(p));
  for (const auto& h : o.add_hosts) {
    size_t c = h.find(':');
    if (c == std::string::npos)
      throw Error(ErrorKind::InvalidArgument, "invalid " + o.names.add_host + " '" + h + "': expected NAME:IP");
    spec.net.extra_hosts.emplace_back(h.substr(0, c), h.substr(c + 1));
  }
  if (spec.network == NetworkMode::User && !(o.allow_egress.empty() && o.deny_egress.empty() && o.dns.empty()))
    throw Error(ErrorKind::InvalidArgument,
                "--allow-egress, --deny-egress and --dns belong to the network on a user-defined one: give them to "
                "'sbx network create' (its egress rules and its DNS server's upstreams)");
  if (spec.network != NetworkMode::Private && spec.network != NetworkMode::User &&
      !(o.allow_egress.empty() && o.deny_egress.empty() && o.publish.empty() && o.dns.empty() && o.add_hosts.empty()))
    throw Error(ErrorKind::InvalidArgument,
                "--allow-egress, --deny-egress, --publish, --dns and --add-host need --network private (or, for "
                "--publish and --add-host, a user-defined network)");
  if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
    runtime::validate_network_options(spec.net);

  for (const auto& v : o.volumes) {
    spec.mounts.push_back(parse_volume(v, o.names.volume));
    const auto& opts = spec.mounts.back().options;
    if (!o.allow_host_idmap && std::find(opts.begin(), opts.end(), "idmap=host") != opts.end())
      throw Error(ErrorKind::Unsupported, "invalid " + o.names.volume + " '" + v +
                                              "': idmap=host (sandbox root writes as host root) is for the sbx "
                                              "command line only");
  }
  for (const auto& m : o.mounts) spec.mounts.push_back(parse_mount_flag(m, o.names.mount));
  for (const auto& t : o.tmpfs) spec.mounts.push_back(parse_tmpfs(t, o.names.tmpfs));

  if (o.memory_bytes) {
    if (*o.memory_bytes <= 0) throw Error(ErrorKind::InvalidArgument, "invalid memory limit: must be above 0 bytes");
    spec.resources.memory_bytes = *o.memory_bytes;
  }
  if (o.disk_bytes) {
    if (*o.disk_bytes < (uint64_t{1} << 20))
      throw Error(ErrorKind::InvalidArgument, "invalid " + o.names.disk +
                                                  ": the writable layer needs at least 1m (e.g. --disk 512m)");
    spec.disk_bytes = *o.disk_bytes;
  }
  if (o.cpus) {
    // At most 1e6: beyond any host, and the cgroup quota (cpus * 100000 us)
    // must stay within a long.
    if (!(*o.cpus > 0 && *o.cpus <= 1e6))
      throw Error(ErrorKind::InvalidArgument, "invalid " + o.names.cpus + ": must be above 0 and at most 1e6");
    spec.resources.cpus = o.cpus;
  }
  int64_t pids = o.pids_limit.value_or(1024);
  if (pids > 0) spec.resources.pids_limit = pids;
  for (const auto& u : o.ulimits) spec.process.rlimits.push_back(runtime::parse_ulimit(u));
  // What the user left unset gets the default bounds (runtime/default_bounds.h).
  runtime::apply_default_bounds(spec, o.run_layer && runtime::backend_for(spec.runtime)->run_layer_takes_disk_bound());
  for (auto& w : runtime::clamp_rlimits(spec.process.rlimits))
    if (warnings) warnings->push_back(std::move(w));
  spec.timeout = o.timeout;
  spec.idle_timeout = o.idle_timeout;

  for (const auto& s : o.snapshot_mounts) {
    auto c = s.find(':');
    if (c == std::string::npos || c == 0 || c + 1 >= s.size() || s[c + 1] != '/')
      throw Error(ErrorKind::InvalidArgument, "invalid --mount-snapshot '" + s + "': expected NAME:/ABSOLUTE/TARGET");
  }
  req.mount_snapshots = o.snapshot_mounts;

  if (!o.gpu.gpus.empty() || !o.gpu.devices.empty()) {
    GpuRequest g = o.gpu;
    if (g.runsc.empty()) g.runsc = o.runsc;
    Engine({}).apply_gpus(g, spec);  // no state: the host's GPUs and CDI specs
  }
  req.userns = o.userns;
  req.runsc = o.runsc;
  return req;
}

}  // namespace sbx::engine
