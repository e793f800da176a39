// The options `sbx run` and `sbx create` share (cli/sandbox_flags.h).
#include "cli/sandbox_flags.h"

#include <CLI/CLI.hpp>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/units.h"
#include "engine/engine.h"
#include "engine/network_choice.h"
#include "oci/pull.h"
#include "oci/store.h"
#include "runtime/backends.h"
#include "runtime/default_bounds.h"
#include "runtime/image_config.h"
#include "runtime/state.h"
#include "runtime/linux/rlimits.h"
#include "runtime/linux/sandbox_network.h"

namespace sbx::cli {

namespace {

const char* const kDiskHelp =
    "Limit the writable layer (files the sandbox writes outside volumes and --tmpfs) to SIZE (e.g. 1g); "
    "writes beyond it fail with ENOSPC. The layer is then a tmpfs: its bytes are memory, counted against "
    "--memory as they are written. Default for sbx run: 2g (see 'sbx info')";

/// The sandbox's part of the command line, exactly as typed. CLI11 (2.1)
/// with prefix_command() cannot tell "--bad IMAGE" from "IMAGE --bad" nor
/// "-- CMD" from "CMD --", so sbx finds where its own options end itself,
/// from the last `n` words of /proc/self/cmdline and the options' metadata.
/// Sets f.unknown on an unknown option before IMAGE.
void split_command_line(CLI::App& run_cmd, size_t n, SandboxFlags& f) {
  std::string raw = fs::read_file("/proc/self/cmdline");
  std::vector<std::string> argv;
  for (size_t i = 0; i < raw.size();) {
    size_t end = raw.find('\0', i);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(i, end - i));
    i = end + 1;
  }
  if (n > argv.size()) return;
  std::vector<std::string> args(argv.end() - static_cast<long>(n), argv.end());
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // IMAGE (or, with --rootfs, the command)
    if (a[1] == '-') {
      std::string name = a.substr(0, a.find('='));
      const CLI::Option* o = run_cmd.get_option_no_throw(name);
      if (!o) {
        if (name == "--help") continue;
        f.unknown = name;
        return;
      }
      if (o->get_expected_max() > 0 && a.find('=') == std::string::npos) ++i;
      continue;
    }
    // -abc: flags, the last may take a value (-e KEY=VAL, -eKEY=VAL).
    for (size_t k = 1; k < a.size(); ++k) {
      const CLI::Option* o = run_cmd.get_option_no_throw(std::string("-") + a[k]);
      if (!o) {
        if (a[k] == 'h') continue;
        f.unknown = std::string("-") + a[k];
        return;
      }
      if (o->get_expected_max() > 0) {
        if (k + 1 == a.size()) ++i;
        break;
      }
    }
  }
  f.positional.assign(args.begin() + static_cast<long>(std::min(i, args.size())), args.end());
  f.exact = true;
}

/// Legal access to CLI::App's protected list of unparsed words (a pointer to
/// member taken through a derived class).
struct MissingAccess : CLI::App {
  static auto ptr() { return &MissingAccess::missing_; }
};

}  // namespace

void add_sandbox_options(CLI::App& app, CLI::App& cmd, const std::shared_ptr<SandboxFlags>& f,
                         const SandboxHelp& help) {
  CLI::App* c = &cmd;
  cmd.preparse_callback([f](size_t n) { f->nargs = n; });
  cmd.prefix_command();
  cmd.allow_extras();
  cmd.fallthrough(false);  // everything from IMAGE on belongs to the sandbox
  // IMAGE (with --rootfs: the command's first word); the rest is taken
  // verbatim by prefix_command(). A positional is needed for a leading "--".
  cmd.add_option("IMAGE", f->first, help.image)->each([f, c, &app](const std::string&) {
    // Runs before CLI11 checks the main app's extras: for "IMAGE -- CMD"
    // CLI11 hands the words after "--" to the main app; they are ours.
    split_command_line(*c, f->nargs, *f);
    auto& extras = app.*MissingAccess::ptr();
    // An unknown option before IMAGE is the cause, whatever CLI11 did with
    // the words after "--": the command reports it (not the words).
    if (!f->unknown.empty()) {
      extras.clear();
      return;
    }
    if (!f->exact) return;
    bool ours = true;
    for (const auto& [cls, word] : extras)
      ours &= cls != CLI::detail::Classifier::SUBCOMMAND &&
              std::find(f->positional.begin(), f->positional.end(), word) != f->positional.end();
    if (ours) extras.clear();
  });
  cmd.add_option("-e,--env", f->env, "Set an environment variable (KEY=VAL, or KEY to copy it)")
      ->allow_extra_args(false);
  cmd.add_option("--env-file", f->env_files, "Read environment variables from a file")->allow_extra_args(false);
  cmd.add_option("-w,--workdir", f->workdir, "Working directory inside the sandbox")
      ->each([f](const std::string&) { f->workdir_set = true; });
  cmd.add_option("-u,--user", f->user, "User: NAME|UID[:GROUP|GID], resolved in the image's /etc/passwd")
      ->each([f](const std::string&) { f->user_set = true; });
  cmd.add_option("-v,--volume", f->volumes, "Bind mount HOST-DIR:CONTAINER-DIR[:OPTS] (ro, nosuid, nodev, noexec; idmap=host: sandbox root writes as host root, unsafe)")->allow_extra_args(false);
  cmd.add_option("--tmpfs", f->tmpfs, "Mount a tmpfs: PATH[:size=64m,mode=1777,exec]")->allow_extra_args(false);
  cmd.add_flag("--read-only", f->read_only, "Mount the root file system read-only");
  cmd.add_option("--hostname", f->hostname, "Host name inside the sandbox (default: the short id)");
  cmd.add_option("--network,--net", f->network,
                 "none (default: only loopback), host, private (alias bridge: own veth, an address from "
                 "$SBX_NETWORK_POOL (default 10.213.0.0/16), NAT out), or NAME[,NAME…] of networks from "
                 "'sbx network create' (repeatable)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->delimiter(',');
  cmd.add_option("--network-alias", f->network_aliases,
                 "On a user-defined network: another name for the sandbox on its DNS (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--ip", f->ip, "On a user-defined network: its IPv4 address there (default: the next free one)");
  cmd.add_option("--allow-egress", f->allow_egress,
                 "With --network private: allow only this IP, CIDR, DOMAIN or *.DOMAIN (repeatable); all else is refused")
      ->allow_extra_args(false);
  cmd.add_option("--deny-egress", f->deny_egress, "With --network private: refuse this IP or CIDR (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("-p,--publish", f->publish,
                 "With --network private: publish [HOST_IP:]HOST_PORT:CONTAINER_PORT[/tcp|udp]")
      ->allow_extra_args(false);
  cmd.add_option("--dns", f->dns, "With --network private: a DNS server for /etc/resolv.conf (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--add-host", f->add_hosts, "With --network private: add NAME:IP to /etc/hosts (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--userns", f->userns,
                 "auto: uid 0..65535 inside are a per-sandbox unprivileged host range (default); host: the host's ids")
      ->capture_default_str();
  cmd.add_option("-m,--memory", f->memory, help.memory);
  cmd.add_option("--disk", f->disk, kDiskHelp)->type_name("SIZE");
  cmd.add_option("--cpus", f->cpus, "CPU limit, in CPUs (e.g. 1.5)");
  cmd.add_option("--pids-limit", f->pids_limit, "Most processes in the sandbox (0 or -1: unlimited)")
      ->capture_default_str();
  cmd.add_option("--ulimit", f->ulimits, "rlimit NAME=SOFT[:HARD], e.g. nofile=1024:2048 (default nofile=1024:65536)")->allow_extra_args(false);
  cmd.add_option("--timeout", f->timeout, help.timeout);
  cmd.add_option("--rootfs", f->rootfs, "Use DIR as the (read-only, overlaid) root instead of an image");
  cmd.add_option("--entrypoint", f->entrypoint, "Override the image's Entrypoint")
      ->each([f](const std::string&) { f->entrypoint_set = true; });
  cmd.add_option("--name", f->name, help.name);
  cmd.add_option("--runtime", f->runtime,
                 "native (namespaces, the default) or gvisor (runsc); default from $SBX_RUNTIME")
      ->envname("SBX_RUNTIME")
      ->capture_default_str();
  cmd.add_option("--pull", f->pull,
                 "Pull the image: missing (when it is not in the store; a short name from registries.conf's search registries, else docker.io), always, never, newer")
      ->check(CLI::IsMember({"missing", "always", "never", "newer"}))
      ->each([f](const std::string&) { f->pull_set = true; })
      ->capture_default_str();
  cmd.add_option("--runsc", f->runsc, "Path to runsc for --runtime gvisor (default: from $PATH)");
}

void finish_command_line(CLI::App& cmd, SandboxFlags& f) {
  if (f.exact) return;  // split when IMAGE was parsed
  f.positional.clear();
  if (!f.first.empty()) f.positional.push_back(f.first);
  for (auto& r : cmd.remaining()) f.positional.push_back(r);
  split_command_line(cmd, f.nargs, f);
}

SandboxSpec build_spec(const Globals& g, const SandboxFlags& f, const BuildOptions& b) {
  if (!f.unknown.empty())
    throw Error("sbx " + b.command + ": unknown option " + f.unknown + "; see 'sbx " + b.command + " --help'");
  SandboxSpec spec;
  spec.id = runtime::new_sandbox_id();
  spec.name = f.name;
  std::vector<std::string> args = f.positional;
  if (!f.exact && !args.empty() && args[0] == "--") args.erase(args.begin());
  oci::ImageConfig image;
  if (!f.rootfs.empty()) {
    char* real = ::realpath(f.rootfs.c_str(), nullptr);
    if (!real) throw_errno("--rootfs " + f.rootfs);
    spec.layer_dirs = {real};
    spec.image_ref = real;
    ::free(real);
  } else {
    if (args.empty())
      throw Error("sbx " + b.command + " needs an IMAGE (or --rootfs DIR); see 'sbx " + b.command + " --help'");
    spec.image_ref = args[0];
    args.erase(args.begin());
    if (!args.empty() && args[0] == "--") args.erase(args.begin());
    oci::PullOptions po;
    po.progress = make_pull_printer(false, false);
    engine::Engine eng = make_engine(g);
    oci::ImageRecord rec = eng.resolve_or_pull(spec.image_ref, oci::parse_pull_policy(f.pull), f.pull_set, po);
    spec.image_id = rec.id;
    spec.layer_dirs = eng.layer_dirs(rec);
    image = rec.config;
  }

  spec.hostname = f.hostname.empty() ? spec.id.substr(0, 12) : f.hostname;
  runtime::ProcessOverrides o;
  o.command = args;
  if (f.entrypoint_set) o.entrypoint = std::vector<std::string>{f.entrypoint};
  for (const auto& file : f.env_files)
    for (auto& kv : runtime::parse_env_file(file)) o.env.push_back(kv);
  for (const auto& e : f.env)
    if (auto kv = runtime::expand_env_arg(e)) o.env.push_back(*kv);
  if (f.workdir_set) o.workdir = f.workdir;
  if (f.user_set) o.user = f.user;
  o.terminal = b.terminal;
  // Without a COMMAND (create) the sandbox just holds: the image's Cmd is
  // not run. "true" satisfies apply_image_config; the args are cleared after.
  bool hold_only = b.hold_without_command && args.empty() && !f.entrypoint_set;
  if (hold_only) o.command = {"true"};
  runtime::apply_image_config(spec, image, o);
  if (hold_only) spec.process.args.clear();
  spec.process.capabilities = default_capabilities();
  spec.readonly_rootfs = f.read_only;
  engine::apply_network_choice(spec, f.network, f.network_aliases, f.ip);
  spec.net.allow_egress = f.allow_egress;
  spec.net.deny_egress = f.deny_egress;
  spec.net.dns = f.dns;
  for (const auto& p : f.publish) spec.net.publish.push_back(runtime::parse_publish(p));
  for (const auto& h : f.add_hosts) {
    size_t c = h.find(':');
    if (c == std::string::npos) throw Error("invalid --add-host '" + h + "': expected NAME:IP");
    spec.net.extra_hosts.emplace_back(h.substr(0, c), h.substr(c + 1));
  }
  if (spec.network == NetworkMode::User && !(f.allow_egress.empty() && f.deny_egress.empty() && f.dns.empty()))
    throw Error("--allow-egress, --deny-egress and --dns belong to the network on a user-defined one: give them to "
                "'sbx network create' (its egress rules and its DNS server's upstreams)");
  if (spec.network != NetworkMode::Private && spec.network != NetworkMode::User &&
      !(f.allow_egress.empty() && f.deny_egress.empty() && f.publish.empty() && f.dns.empty() && f.add_hosts.empty()))
    throw Error("--allow-egress, --deny-egress, --publish, --dns and --add-host need --network private (or, for "
                "--publish and --add-host, a user-defined network)");
  if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
    runtime::validate_network_options(spec.net);
  for (const auto& v : f.volumes) spec.mounts.push_back(parse_volume(v));
  for (const auto& t : f.tmpfs) spec.mounts.push_back(parse_tmpfs(t));
  if (!f.memory.empty()) spec.resources.memory_bytes = static_cast<int64_t>(units::parse_size(f.memory, "--memory"));
  if (!f.disk.empty()) spec.disk_bytes = parse_disk(f.disk);
  if (f.userns != "auto" && f.userns != "host") throw Error("invalid --userns '" + f.userns + "': use auto or host");
  if (f.cpus) {
    if (*f.cpus <= 0) throw Error("invalid --cpus: must be above 0");
    spec.resources.cpus = f.cpus;
  }
  if (f.pids_limit > 0) spec.resources.pids_limit = f.pids_limit;
  for (const auto& u : f.ulimits) spec.process.rlimits.push_back(runtime::parse_ulimit(u));
  runtime::validate_backend_name(f.runtime);  // the registry knows the names
  // What the user left unset gets the default bounds (runtime/default_bounds.h).
  runtime::apply_default_bounds(spec, b.command == "run" && runtime::backend_for(f.runtime)->run_layer_takes_disk_bound());
  for (const auto& w : runtime::clamp_rlimits(spec.process.rlimits)) log::warn(w);
  if (!f.timeout.empty()) spec.timeout = units::parse_duration(f.timeout, "--timeout");
  spec.runtime = f.runtime;
  return spec;
}

engine::UsernsMode userns_mode(const SandboxFlags& f) {
  return f.userns == "host" ? engine::UsernsMode::Host : engine::UsernsMode::Auto;
}

Mount parse_volume(const std::string& text) {
  // HOST:CTR[:OPTS], OPTS a comma list of ro, rw, nosuid, nodev, noexec.
  auto parts = std::vector<std::string>{};
  size_t start = 0;
  for (;;) {
    size_t c = text.find(':', start);
    parts.push_back(text.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
    throw Error("invalid --volume '" + text + "': expected HOST-DIR:CONTAINER-DIR[:ro]");
  if (parts[0][0] != '/')
    throw Error("invalid --volume '" + text + "': the host path must be absolute (named volumes are not supported)");
  if (parts[1][0] != '/') throw Error("invalid --volume '" + text + "': the container path must be absolute");
  char* real = ::realpath(parts[0].c_str(), nullptr);
  if (!real) throw_errno("--volume source " + parts[0]);
  Mount m{parts[1], "bind", real, {"rbind"}};
  ::free(real);
  if (parts.size() == 3) {
    std::istringstream in(parts[2]);
    std::string o;
    while (std::getline(in, o, ',')) {
      if (o == "ro" || o == "rw" || o == "nosuid" || o == "nodev" || o == "noexec" || o == "z" || o == "Z") {
        if (o != "rw" && o != "z" && o != "Z") m.options.push_back(o);
      } else if (o == "idmap=host") {
        m.options.push_back(o);  // opt-in: sandbox ids are host ids on disk (runtime/linux/userns.h)
      } else {
        throw Error("invalid --volume '" + text + "': unknown option '" + o + "' (ro, rw, nosuid, nodev, noexec, idmap=host)");
      }
    }
  }
  return m;
}

uint64_t parse_disk(const std::string& text) {
  uint64_t bytes = units::parse_size(text, "--disk");
  if (bytes < (uint64_t{1} << 20))
    throw Error("invalid --disk '" + text + "': the writable layer needs at least 1m (e.g. --disk 512m)");
  return bytes;
}

Mount parse_tmpfs(const std::string& text) {
  auto colon = text.find(':');
  std::string dest = text.substr(0, colon);
  if (dest.empty() || dest[0] != '/') throw Error("invalid --tmpfs '" + text + "': the path must be absolute");
  // podman's defaults; the user's options come after and win.
  Mount m{dest, "tmpfs", "tmpfs", {"nosuid", "nodev", "noexec"}};
  if (colon != std::string::npos) {
    std::istringstream in(text.substr(colon + 1));
    std::string o;
    while (std::getline(in, o, ',')) {
      if (o == "exec") {
        std::erase(m.options, "noexec");
      } else if (o == "suid" || o == "dev" || o == "rw") {
        std::erase(m.options, "no" + (o == "rw" ? std::string("rw") : o));
      } else if (o.rfind("size=", 0) == 0 || o.rfind("mode=", 0) == 0 || o.rfind("uid=", 0) == 0 ||
                 o.rfind("gid=", 0) == 0 || o == "ro" || o == "noexec" || o == "nosuid" || o == "nodev" ||
                 o.rfind("nr_inodes=", 0) == 0) {
        m.options.push_back(o);
      } else {
        throw Error("invalid --tmpfs '" + text + "': unknown option '" + o + "'");
      }
    }
  }
  return m;
}

}  // namespace sbx::cli
