// The shared sandbox flags as the engine's options (cli/sandbox_flags.h
// sandbox_options): translation only; the engine's builder decides. Apart
// from sandbox_flags.cpp so that the unit tests drive it without CLI11.
#include "cli/sandbox_flags.h"
#include "common/error.h"
#include "common/units.h"
#include "oci/pull.h"

namespace sbx::cli {

engine::SandboxOptions sandbox_options(const SandboxFlags& f, const BuildOptions& b) {
  if (!f.unknown.empty())
    throw Error(ErrorKind::InvalidArgument,
                "sbx " + b.command + ": unknown option " + f.unknown + "; see 'sbx " + b.command + " --help'");
  engine::SandboxOptions o;
  o.names.command = b.command;
  o.name = f.name;
  o.hostname = f.hostname;
  std::vector<std::string> args = f.positional;
  if (!f.exact && !args.empty() && args[0] == "--") args.erase(args.begin());
  if (!f.rootfs.empty()) {
    o.rootfs = f.rootfs;
  } else if (!args.empty()) {
    o.image = args[0];
    args.erase(args.begin());
    if (!args.empty() && args[0] == "--") args.erase(args.begin());
  }
  o.pull = oci::parse_pull_policy(f.pull);
  o.pull_explicit = f.pull_set;
  o.command = args;
  if (f.entrypoint_set) o.entrypoint = std::vector<std::string>{f.entrypoint};
  o.env_files = f.env_files;
  o.env = f.env;
  if (f.workdir_set) o.workdir = f.workdir;
  if (f.user_set) o.user = f.user;
  o.terminal = b.terminal;
  o.hold_without_command = b.hold_without_command;
  o.volumes = f.volumes;
  o.mounts = f.mounts;
  o.tmpfs = f.tmpfs;
  o.read_only = f.read_only;
  o.network = f.network;
  o.network_aliases = f.network_aliases;
  o.ip = f.ip;
  o.allow_egress = f.allow_egress;
  o.deny_egress = f.deny_egress;
  o.publish = f.publish;
  o.dns = f.dns;
  o.add_hosts = f.add_hosts;
  if (!f.memory.empty()) o.memory_bytes = static_cast<int64_t>(units::parse_size(f.memory, "--memory"));
  if (!f.disk.empty()) o.disk_bytes = units::parse_size(f.disk, "--disk");
  if (f.userns != "auto" && f.userns != "host")
    throw Error(ErrorKind::InvalidArgument, "invalid --userns '" + f.userns + "': use auto or host");
  o.userns = userns_mode(f);
  o.cpus = f.cpus;
  o.pids_limit = f.pids_limit;
  o.ulimits = f.ulimits;
  o.run_layer = b.command == "run";
  if (!f.timeout.empty()) o.timeout = units::parse_duration(f.timeout, "--timeout");
  o.runtime = f.runtime;
  o.runsc = f.runsc;
  o.stdin_open = b.stdin_open;
  o.gpu.gpus = b.gpus;
  o.gpu.devices = b.devices;
  o.gpu.host_root = b.gpu_host_root;
  o.snapshot_mounts = b.mount_snapshots;
  o.idle_timeout = b.idle_timeout;
  o.labels = b.labels;
  return o;
}

engine::UsernsMode userns_mode(const SandboxFlags& f) {
  return f.userns == "host" ? engine::UsernsMode::Host : engine::UsernsMode::Auto;
}

}  // namespace sbx::cli
