#include "ocirt/gvisor_delegate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "ocirt/container.h"
#include "ocirt/state_store.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/gvisor_bundle.h"

namespace sbx::ocirt {

namespace {

using json = nlohmann::json;

std::string marker(const std::string& root, const std::string& id) { return root + "/.gvisor/" + id; }

int run_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  ForwardedSignalsBlocked held;  // a signal before the wait is forwarded, not fatal
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for runsc");
  if (pid == 0) {
    held.restore_in_child();
    ::execv(a[0], a.data());
    std::string m = "sbx-runc: exec " + argv[0] + ": " + std::strerror(errno) + " (set SBX_RUNSC or install gVisor)\n";
    ssize_t n = ::write(2, m.data(), m.size());
    (void)n;
    ::_exit(127);
  }
  // runsc forwards what it gets to the container (run, exec, restore in the
  // foreground), so sbx-runc passes the signals it gets on to runsc.
  return wait_forwarding_signals(pid, &held.old);
}

// run_and_wait with no output (a probe).
int run_quiet_status(const std::vector<std::string>& argv) {
  int st = runtime::gvisor::run_quiet(argv);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::vector<std::string> runsc_argv(const std::string& root, const std::vector<std::string>& flags,
                                    const std::vector<std::string>& global_args, const std::vector<std::string>& args) {
  std::vector<std::string> a = {runsc_binary(), "--root", root + "/.gvisor/runsc"};
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), global_args.begin(), global_args.end());
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

void forget(const std::string& root, const std::string& id) noexcept {
  ::unlink(marker(root, id).c_str());
  std::error_code ec;
  std::filesystem::remove_all(gvisor_bundle(root, id), ec);
}

}  // namespace

std::vector<std::string> runsc_exec_args(const std::vector<std::string>& args) {
  if (args.empty()) return args;
  // runc's one-letter options; runsc (Go's flag package) knows only the long names.
  static const std::map<std::string, std::map<std::string, std::string>> kShort = {
      {"delete", {{"-f", "--force"}}},
      {"kill", {{"-a", "--all"}}},
      {"ps", {{"-f", "--format"}}},
      {"exec", {{"-d", "--detach"}, {"-p", "--process"}, {"-e", "--env"}, {"-u", "--user"}}},
  };
  auto sh = kShort.find(args[0]);
  if (args[0] != "exec") {
    std::vector<std::string> out = args;
    if (sh != kShort.end())
      for (size_t i = 1; i < out.size(); ++i) {
        if (out[i] == "--" || out[i].empty() || out[i][0] != '-') continue;
        if (auto l = sh->second.find(out[i]); l != sh->second.end()) out[i] = l->second;
      }
    return out;
  }
  // runc's exec options that take a value: the first other word is the id,
  // and what follows it is the command (not ours to change).
  static const std::set<std::string> kValued = {"-p", "--process", "--pid-file", "--console-socket", "--cwd", "-e",
                                                "--env", "-u", "--user", "--process-label", "--apparmor", "-c", "--cap"};
  std::vector<std::string> out = {args[0]};
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string n;
    if (a == "--" || a.empty() || a[0] != '-') {  // the id, or the command after --
      out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if ((a == "--preserve-fds" || a == "-preserve-fds") && i + 1 < args.size()) n = args[++i];
    else if (a.rfind("--preserve-fds=", 0) == 0) n = a.substr(15);
    else {
      auto l = sh->second.find(a);
      out.push_back(l != sh->second.end() ? l->second : a);
      if (a.find('=') == std::string::npos && kValued.count(a) && i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    unsigned long count = 0;
    try {
      count = std::stoul(n);
    } catch (...) {
      throw Error("exec --preserve-fds '" + n + "': give a number of fds");
    }
    for (unsigned long fd = 3; fd < 3 + count; ++fd) out.insert(out.end(), {"--pass-fd", std::to_string(fd) + ":" + std::to_string(fd)});
  }
  return out;
}

std::string runsc_binary() {
  const char* e = std::getenv("SBX_RUNSC");
  return runtime::find_runsc(e && *e ? e : "");
}

std::string gvisor_bundle(const std::string& root, const std::string& id) { return root + "/.gvisor-bundles/" + id; }

bool bundle_wants_gvisor(const std::string& bundle) {
  std::ifstream f(bundle + "/config.json");
  if (!f) throw_errno("bundle " + bundle + ": open config.json");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  Config c = parse_config(text, bundle);
  auto it = c.annotations.find("dev.sbx.runtime");
  return it != c.annotations.end() && it->second == "gvisor";
}

bool is_gvisor_container(const std::string& root, const std::string& id) noexcept {
  if (id.empty() || id.find('/') != std::string::npos) return false;
  return ::access(marker(root, id).c_str(), F_OK) == 0;
}

std::vector<std::string> gvisor_flags(const Config& cfg) {
  // runsc's own sandbox network needs interfaces to copy from a namespace it
  // is given; a new one without a path has none.
  const Namespace* net = cfg.find_namespace("network");
  NetworkMode mode = !net ? NetworkMode::Host : net->path.empty() ? NetworkMode::None : NetworkMode::Private;
  return runtime::gvisor::runsc_sandbox_flags(
      mode, cfg.root_readonly ? runtime::gvisor::RootWrites::ReadOnly : runtime::gvisor::RootWrites::Host);
}

std::string gvisor_config(const std::string& config_text, const Config& cfg) {
  json j;
  try {
    j = json::parse(config_text);
  } catch (const json::exception& e) {
    throw Error(std::string("config.json: ") + e.what());
  }
  j["root"]["path"] = cfg.root_path;
  if (cfg.resources.pids_limit && *cfg.resources.pids_limit > 0) {
    // As apply_pids_limit_as_nproc does for sbx run --pids-limit.
    const auto b = runtime::gvisor::gvisor_pids_bounds(*cfg.resources.pids_limit);
    json& rl = j["process"]["rlimits"];
    if (!rl.is_array()) rl = json::array();
    bool found = false;
    for (auto& r : rl) {
      if (r.value("type", "") != "RLIMIT_NPROC") continue;
      r["soft"] = std::min<uint64_t>(r.value("soft", b.nproc), b.nproc);
      r["hard"] = std::min<uint64_t>(r.value("hard", b.nproc), b.nproc);
      found = true;
    }
    if (!found) rl.push_back({{"type", "RLIMIT_NPROC"}, {"soft", b.nproc}, {"hard", b.nproc}});
    j["linux"]["resources"]["pids"]["limit"] = b.host_pids_max;
  }
  return j.dump(2);
}

int gvisor_create(const std::string& root, const std::string& id, const Config& cfg, const std::string& config_text,
                  const std::vector<std::string>& global_args, const std::vector<std::string>& verb_args) {
  check_id(id);
  (void)runsc_binary();  // a clear error before anything is written
  ::mkdir(root.c_str(), 0700);
  ::mkdir((root + "/.gvisor").c_str(), 0700);
  ::mkdir((root + "/.gvisor-bundles").c_str(), 0700);
  if (::access((container_dir(root, id) + "/state.json").c_str(), F_OK) == 0)
    throw Error("container \"" + id + "\" already exists (in " + root + ")", EEXIST);
  const std::vector<std::string> flags = gvisor_flags(cfg);
  const std::string config = gvisor_config(config_text, cfg);
  std::string m = marker(root, id);
  int fd = ::open(m.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) throw Error("container \"" + id + "\" already exists (in " + root + ", gVisor)", EEXIST);
    throw_errno("create " + m);
  }
  std::string text;
  for (const auto& f : flags) text += f + "\n";
  ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  const std::string bundle = gvisor_bundle(root, id);
  try {
    if (n != static_cast<ssize_t>(text.size())) throw_errno("write " + m);
    fs::mkdir_p(bundle, 0700);
    fs::write_file_atomic(bundle + "/config.json", config, 0600);
  } catch (...) {
    forget(root, id);
    throw;
  }
  std::vector<std::string> cmd = verb_args;
  cmd.insert(cmd.end(), {"--bundle", bundle, id});
  int rc = run_and_wait(runsc_argv(root, flags, global_args, cmd));
  bool detached = verb_args.empty() || (verb_args[0] != "restore" && verb_args[0] != "run") ||
                  std::find_if(verb_args.begin(), verb_args.end(), [](const std::string& a) {
                    return a == "-d" || a == "--detach" || a == "-detach";
                  }) != verb_args.end();
  if (rc != 0 || !detached) {
    // (runsc run/restore without --detach wait for the container; what is left of it goes.)
    if (!detached) run_and_wait(runsc_argv(root, flags, global_args, {"delete", "--force", id}));
    forget(root, id);
  }
  return rc;
}

int gvisor_command(const std::string& root, const std::string& id, const std::vector<std::string>& global_args,
                   const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  {
    std::ifstream f(marker(root, id));
    std::string line;
    while (std::getline(f, line))
      if (!line.empty()) flags.push_back(line);
  }
  int rc = run_and_wait(runsc_argv(root, flags, global_args, runsc_exec_args(args)));
  if (!args.empty() && args[0] == "delete") {
    bool force = false;
    for (const auto& a : args) force |= (a == "-f" || a == "--force" || a == "-force");
    // As runc, delete --force of a container runsc no longer knows succeeds;
    // one runsc failed to delete keeps its record (else its sandbox would
    // run on with nothing left that names it).
    if (rc != 0 && force && run_quiet_status(runsc_argv(root, flags, {}, {"state", id})) != 0) rc = 0;
    if (rc == 0) forget(root, id);
  }
  return rc;
}

}  // namespace sbx::ocirt
