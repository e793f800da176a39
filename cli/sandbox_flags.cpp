// The options `sbx run` and `sbx create` share (cli/sandbox_flags.h).
#include "cli/sandbox_flags.h"

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/units.h"
#include "engine/engine.h"
#include "engine/sandbox_options.h"
#include "oci/pull.h"
#include "oci/store.h"
#include "runtime/backends.h"

namespace sbx::cli {

namespace {

const char* const kDiskHelp =
    "Limit the writable layer (files the sandbox writes outside volumes and --tmpfs) to SIZE (e.g. 1g); "
    "writes beyond it fail with ENOSPC. The layer is then a tmpfs: its bytes are memory, counted against "
    "--memory as they are written. Default for sbx run: 2g (see 'sbx info')";

std::vector<std::string>& command_line_words() {
  static std::vector<std::string> words;
  return words;
}

/// The sandbox's part of the command line, exactly as given to CLI11. CLI11
/// (2.1) with prefix_command() cannot tell "--bad IMAGE" from "IMAGE --bad"
/// nor "-- CMD" from "CMD --", so sbx finds where its own options end itself,
/// from the last `n` words of the command line (set_command_line) and the
/// options' metadata. Sets f.unknown on an unknown option before IMAGE.
void split_command_line(CLI::App& run_cmd, size_t n, SandboxFlags& f) {
  const std::vector<std::string>& argv = command_line_words();
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

void set_command_line(std::vector<std::string> words) { command_line_words() = std::move(words); }

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
  cmd.add_option("-v,--volume", f->volumes, "Bind mount HOST-DIR:CONTAINER-DIR[:OPTS] (ro, nosuid, nodev, noexec; idmap=host: sandbox root writes as host root, unsafe), or mount the named volume NAME:CONTAINER-DIR[:ro] (created when missing; see 'sbx volume')")->allow_extra_args(false);
  cmd.add_option("--mount", f->mounts, "Mount type=volume|bind|tmpfs,source=NAME|HOST-DIR,target=CONTAINER-DIR[,readonly] (docker's --mount)")->allow_extra_args(false);
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

engine::RunRequest build_request(const Globals& g, const SandboxFlags& f, const BuildOptions& b) {
  engine::SandboxOptions o = sandbox_options(f, b);
  if (o.image.empty() && o.rootfs.empty())
    throw Error(ErrorKind::InvalidArgument,
                "sbx " + b.command + " needs an IMAGE (or --rootfs DIR); see 'sbx " + b.command + " --help'");
  o.pull_options.progress = make_pull_printer(false, false);
  engine::Engine eng = make_engine(g);
  std::vector<std::string> warnings;
  engine::RunRequest req = engine::build_sandbox(eng, o, "", &warnings);
  for (const auto& w : warnings) log::warn(w);
  return req;
}

SandboxSpec build_spec(const Globals& g, const SandboxFlags& f, const BuildOptions& b) {
  return build_request(g, f, b).spec;
}

}  // namespace sbx::cli
