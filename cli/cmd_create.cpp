// sbx create: start a detached, long-lived sandbox and print its id
// (runtime/lifecycle.h). Takes sbx run's sandbox options plus --label,
// --timeout (a hard lifetime) and --idle-timeout (no exec for that long).
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "common/error.h"
#include "common/log.h"
#include "common/units.h"
#include "oci/store.h"
#include "runtime/gvisor_lifecycle.h"
#include "runtime/image_config.h"
#include "runtime/lifecycle.h"
#include "runtime/native_backend.h"
#include "runtime/rlimits.h"

namespace sbx::cli {

namespace {

struct CreateFlags {
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> env, env_files, volumes, tmpfs, ulimits, labels;
  std::string workdir, user, hostname, network = "none", memory, timeout, idle_timeout, name, rootfs, entrypoint;
  std::string runtime = "native", runsc, disk, userns = "auto";
  std::optional<double> cpus;
  int64_t pids_limit = 1024;
  bool read_only = false, entrypoint_set = false, workdir_set = false, user_set = false;
};

int create(const Globals& g, CreateFlags& f) {
  SandboxSpec spec;
  spec.id = runtime::new_sandbox_id();
  spec.name = f.name;
  spec.runtime = f.runtime;
  std::vector<std::string> args = f.command;
  if (f.image.empty() && !args.empty() && args[0] != "--") {
    f.image = args[0];
    args.erase(args.begin());
  }
  if (!args.empty() && args[0] == "--") args.erase(args.begin());
  oci::ImageConfig image;
  if (!f.rootfs.empty()) {
    // --rootfs DIR: the first positional is the command's first word.
    if (!f.image.empty()) args.insert(args.begin(), f.image);
    char* real = ::realpath(f.rootfs.c_str(), nullptr);
    if (!real) throw_errno("--rootfs " + f.rootfs);
    spec.layer_dirs = {real};
    spec.image_ref = real;
    ::free(real);
  } else {
    if (f.image.empty()) throw Error("sbx create needs an IMAGE (or --rootfs DIR); see 'sbx create --help'");
    oci::Store store(g.root);
    oci::ImageRecord rec = store.resolve(f.image);
    spec.image_ref = f.image;
    spec.image_id = rec.id;
    spec.layer_dirs = store.layer_dirs(rec);
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
  // Without a COMMAND the sandbox just holds (the image's Cmd is not run: a
  // long-lived sandbox is for execs; give the command to run it).
  bool hold_only = args.empty() && !f.entrypoint_set;
  if (hold_only) o.command = {"true"};  // satisfies apply_image_config; cleared below
  runtime::apply_image_config(spec, image, o);
  if (hold_only) spec.process.args.clear();
  spec.process.capabilities = default_capabilities();
  spec.readonly_rootfs = f.read_only;
  if (f.network == "none") {
    spec.network = NetworkMode::None;
  } else if (f.network == "host") {
    spec.network = NetworkMode::Host;
  } else {
    throw Error("invalid --network '" + f.network + "': use none or host");
  }
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
  for (const auto& w : runtime::clamp_rlimits(spec.process.rlimits)) log::warn(w);
  if (!f.timeout.empty()) spec.timeout = units::parse_duration(f.timeout, "--timeout");
  if (!f.idle_timeout.empty()) spec.idle_timeout = units::parse_duration(f.idle_timeout, "--idle-timeout");
  for (const auto& l : f.labels) {
    auto eq = l.find('=');
    if (eq == 0 || l.empty()) throw Error("invalid --label '" + l + "': use KEY=VALUE");
    spec.labels[l.substr(0, eq)] = eq == std::string::npos ? "" : l.substr(eq + 1);
  }
  if (f.runtime == "gvisor") {
    std::cout << runtime::create_gvisor_sandbox(std::move(spec), g.run_root, f.runsc) << std::endl;
    return 0;
  }
  if (f.runtime != "native") throw Error("invalid --runtime '" + f.runtime + "': use native or gvisor");
  runtime::CreateOptions co;
  // As sbx run: root inside is not root on the host, unless --userns host or
  // --network host (whose network namespace belongs to the host's user namespace).
  co.userns = f.userns == "auto" && spec.network == NetworkMode::None;
  std::cout << runtime::create_sandbox(std::move(spec), g.run_root, co) << std::endl;
  return 0;
}

}  // namespace

void register_create_command(CLI::App& app, Globals& g, Action& action) {
  auto f = std::make_shared<CreateFlags>();
  CLI::App* cmd = app.add_subcommand("create", "Start a long-lived sandbox in the background and print its id");
  cmd->footer(
      "Usage: sbx create [OPTIONS] IMAGE [--] [COMMAND [ARG...]]\n\n"
      "Without a COMMAND the sandbox just stays alive for 'sbx exec' (the image's Cmd is not run).\n"
      "The first process's output goes to 'sbx logs'. --timeout and --idle-timeout are enforced\n"
      "by the sandbox's own init: they fire even when no sbx process is left.");
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->fallthrough(false);
  cmd->add_option("IMAGE", f->image, "Image (name[:tag], id) — or, with --rootfs, the command");
  cmd->add_option("-e,--env", f->env, "Set an environment variable (KEY=VAL, or KEY to copy it)")->allow_extra_args(false);
  cmd->add_option("--env-file", f->env_files, "Read environment variables from a file")->allow_extra_args(false);
  cmd->add_option("-w,--workdir", f->workdir, "Working directory inside the sandbox")
      ->each([f](const std::string&) { f->workdir_set = true; });
  cmd->add_option("-u,--user", f->user, "User: NAME|UID[:GROUP|GID], resolved in the image's /etc/passwd")
      ->each([f](const std::string&) { f->user_set = true; });
  cmd->add_option("-v,--volume", f->volumes, "Bind mount HOST-DIR:CONTAINER-DIR[:ro]")->allow_extra_args(false);
  cmd->add_option("--tmpfs", f->tmpfs, "Mount a tmpfs: PATH[:size=64m,mode=1777,exec]")->allow_extra_args(false);
  cmd->add_flag("--read-only", f->read_only, "Mount the root file system read-only");
  cmd->add_option("--hostname", f->hostname, "Host name inside the sandbox (default: the short id)");
  cmd->add_option("--network,--net", f->network, "none (default: only loopback) or host")->capture_default_str();
  cmd->add_option("-m,--memory", f->memory, "Memory limit (e.g. 256m)");
  cmd->add_option("--disk", f->disk, kDiskHelp)->type_name("SIZE");
  cmd->add_option("--userns", f->userns,
                  "auto: uid 0..65535 inside are a per-sandbox unprivileged host range (default); host: the host's ids")
      ->capture_default_str();
  cmd->add_option("--cpus", f->cpus, "CPU limit, in CPUs (e.g. 1.5)");
  cmd->add_option("--pids-limit", f->pids_limit, "Most processes in the sandbox (0 or -1: unlimited)")
      ->capture_default_str();
  cmd->add_option("--ulimit", f->ulimits, "rlimit NAME=SOFT[:HARD], e.g. nofile=1024:2048")->allow_extra_args(false);
  cmd->add_option("--timeout", f->timeout, "End the sandbox after this long (10s, 1m30s, 2h)");
  cmd->add_option("--idle-timeout", f->idle_timeout, "End the sandbox after this long without an exec");
  cmd->add_option("--rootfs", f->rootfs, "Use DIR as the (read-only, overlaid) root instead of an image");
  cmd->add_option("--entrypoint", f->entrypoint, "Override the image's Entrypoint")
      ->each([f](const std::string&) { f->entrypoint_set = true; });
  cmd->add_option("--name", f->name, "A name for the sandbox (unique among sandboxes)");
  cmd->add_option("-l,--label", f->labels, "A label KEY=VALUE (for ps --filter and rm --filter)")->allow_extra_args(false);
  cmd->add_option("--runtime", f->runtime, "native (namespaces, the default) or gvisor (runsc); default from $SBX_RUNTIME")
      ->envname("SBX_RUNTIME")
      ->capture_default_str();
  cmd->add_option("--runsc", f->runsc, "Path to runsc for --runtime gvisor (default: from $PATH)");
  cmd->callback([f, cmd, &g, &action] {
    f->command = cmd->remaining();
    action = [f, &g] { return create(g, *f); };
  });
}

}  // namespace sbx::cli
