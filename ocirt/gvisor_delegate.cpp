#include "ocirt/gvisor_delegate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
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

// runsc 20240729 takes a network namespace for the host's when
// /proc/sys/net/core/rmem_default can be read in it (its isRootNS), and
// refuses to set up its network there ("cannot run with network enabled in
// root network namespace"); since Linux 6.x that file is there in every
// namespace. When the container's namespace is not sbx-runc's own (checked
// by inode, needs_netns_probe_hidden), runsc runs in a mount namespace of its
// own whose /proc/sys has no net/: an empty tmpfs over /proc/sys with its
// other directories bound back (/proc/sys/net is looked up per network
// namespace, so a mount over it would not cover the joined one). Called in
// the forked child, before exec. No throw: on failure runsc runs as it would
// have, and says why it refuses.
void hide_netns_probe_in_child() noexcept {
  if (::access("/proc/sys/net/core/rmem_default", F_OK) != 0) return;
  if (::unshare(CLONE_NEWNS) < 0) return;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0) return;
  // The real /proc/sys stays reachable at a private path while the tmpfs goes on.
  int old = ::open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (old < 0) return;
  if (::mount("tmpfs", "/proc/sys", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555") < 0) {
    ::close(old);
    return;
  }
  for (const char* d : {"abi", "debug", "dev", "fs", "kernel", "user", "vm"}) {
    std::string src = "/proc/self/fd/" + std::to_string(old) + "/" + d, dst = std::string("/proc/sys/") + d;
    if (::mkdir(dst.c_str(), 0555) < 0 && errno != EEXIST) continue;
    ::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr);
  }
  ::mount(nullptr, "/proc/sys", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  ::close(old);
}

// Whether the bundle runsc runs from gives it a network namespace by path
// that is not sbx-runc's own (so runsc's root-namespace probe must not see
// rmem_default, above).
bool needs_netns_probe_hidden(const std::string& bundle) noexcept {
  try {
    json j = json::parse(fs::read_file(bundle + "/config.json"));
    for (const auto& n : j.at("linux").value("namespaces", json::array())) {
      if (n.value("type", "") != "network" || n.value("path", "").empty()) continue;
      struct stat theirs {}, ours {};
      if (::stat(n["path"].get<std::string>().c_str(), &theirs) < 0 || ::stat("/proc/self/ns/net", &ours) < 0) return false;
      return theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev;
    }
  } catch (...) {
  }
  return false;
}

// Runs runsc and waits for it, forwarding the signals sbx-runc gets (runsc
// forwards them to the container: run, exec, restore in the foreground).
// `out_fd`/`err_fd`: where its stdout/stderr go (-1: the caller's).
int spawn_and_wait(const std::vector<std::string>& argv, bool hide_netns_probe, int out_fd, int err_fd) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  ForwardedSignalsBlocked held;  // a signal before the wait is forwarded, not fatal
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for runsc");
  if (pid == 0) {
    held.restore_in_child();
    if (out_fd >= 0) ::dup2(out_fd, 1);
    if (err_fd >= 0) ::dup2(err_fd, 2);
    if (hide_netns_probe) hide_netns_probe_in_child();
    ::execv(a[0], a.data());
    std::string m = "sbx-runc: exec " + argv[0] + ": " + std::strerror(errno) + " (set SBX_RUNSC or install gVisor)\n";
    ssize_t n = ::write(2, m.data(), m.size());
    (void)n;
    ::_exit(127);
  }
  return wait_forwarding_signals(pid, &held.old);
}

int run_and_wait(const std::vector<std::string>& argv, bool hide_netns_probe = false) {
  return spawn_and_wait(argv, hide_netns_probe, -1, -1);
}

// run_and_wait with no output (a probe).
int run_quiet_status(const std::vector<std::string>& argv) {
  int st = runtime::gvisor::run_quiet(argv);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct Captured {
  int status = 0;
  std::string out, err;
};

std::string read_memfd(int fd) {
  std::string s;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// Runs runsc with its stdout and stderr in memory files, and returns once
// runsc itself has exited. The caller's stdio (containerd's shim reads it
// through pipes until every writer closes them) never reaches a process runsc
// leaves behind, so a command returns as soon as runsc does.
Captured run_captured(const std::vector<std::string>& argv, bool hide_netns_probe = false) {
  int out = ::memfd_create("runsc-stdout", MFD_CLOEXEC);
  int err = ::memfd_create("runsc-stderr", MFD_CLOEXEC);
  if (out < 0 || err < 0) throw_errno("memfd_create for runsc's output");
  Captured c;
  try {
    c.status = spawn_and_wait(argv, hide_netns_probe, out, err);
  } catch (...) {
    ::close(out);
    ::close(err);
    throw;
  }
  c.out = read_memfd(out);
  c.err = read_memfd(err);
  ::close(out);
  ::close(err);
  return c;
}

void print(const Captured& c) {
  std::fwrite(c.out.data(), 1, c.out.size(), stdout);
  std::fflush(stdout);
  std::fwrite(c.err.data(), 1, c.err.size(), stderr);
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
  int rc = run_and_wait(runsc_argv(root, flags, global_args, cmd), needs_netns_probe_hidden(bundle));
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

std::string gvisor_status(const std::string& root, const std::string& id, const std::vector<std::string>& flags) {
  Captured c = run_captured(runsc_argv(root, flags, {}, {"state", id}));
  if (c.status != 0) return "";
  try {
    return json::parse(c.out).value("status", "");
  } catch (const json::exception&) {
    return "";
  }
}

namespace {

std::vector<std::string> recorded_flags(const std::string& root, const std::string& id) {
  std::vector<std::string> flags;
  std::ifstream f(marker(root, id));
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) flags.push_back(line);
  return flags;
}

// The state of a container runsc no longer knows (its sandbox ended, or a
// kill tore down a created one): stopped, as runc reports a container whose
// process is gone until it is deleted.
std::string stopped_state(const std::string& root, const std::string& id) {
  json j = {{"ociVersion", "1.0.2"}, {"id", id}, {"status", "stopped"}, {"pid", 0}, {"bundle", gvisor_bundle(root, id)}};
  return j.dump(2) + "\n";
}

// `kill` as runc answers it (containerd's shim reads the words: "container
// not running" and "does not exist" mean the task is gone already). A
// created container is torn down, as runc's kill of its waiting init does;
// runsc itself refuses ("cannot signal container ... in state created").
int gvisor_kill(const std::string& root, const std::string& id, const std::vector<std::string>& flags,
                const std::vector<std::string>& global_args, const std::vector<std::string>& args) {
  const std::string status = gvisor_status(root, id, flags);
  if (status.empty() || status == "stopped") throw Error("container \"" + id + "\": container not running", ESRCH);
  if (status == "created" || status == "creating") {
    Captured c = run_captured(runsc_argv(root, flags, global_args, {"delete", "--force", id}));
    if (c.status != 0) print(c);
    return c.status;
  }
  Captured c = run_captured(runsc_argv(root, flags, global_args, runsc_exec_args(args)));
  // It ended meanwhile ("sandbox is not running" in runsc's words).
  if (c.status != 0 && gvisor_status(root, id, flags) != "running")
    throw Error("container \"" + id + "\": container not running", ESRCH);
  print(c);
  return c.status;
}

}  // namespace

int gvisor_command(const std::string& root, const std::string& id, const std::vector<std::string>& global_args,
                   const std::vector<std::string>& args) {
  const std::vector<std::string> flags = recorded_flags(root, id);
  const std::string verb = args.empty() ? "" : args[0];
  if (verb == "kill") return gvisor_kill(root, id, flags, global_args, args);
  // exec, events and the like stream to the caller; the rest answer once.
  static const std::set<std::string> kOneShot = {"start", "delete", "state", "ps", "pause", "resume", "update"};
  if (!kOneShot.count(verb)) return run_and_wait(runsc_argv(root, flags, global_args, runsc_exec_args(args)));
  Captured c = run_captured(runsc_argv(root, flags, global_args, runsc_exec_args(args)),
                            verb == "start" && needs_netns_probe_hidden(gvisor_bundle(root, id)));
  const bool known = c.status == 0 || run_quiet_status(runsc_argv(root, flags, {}, {"state", id})) == 0;
  if (verb == "state" && !known) {
    std::fputs(stopped_state(root, id).c_str(), stdout);
    return 0;
  }
  if (verb == "delete") {
    // As runc, delete of a container whose process is gone succeeds (runsc
    // forgot it: it was torn down by a kill while created, or its sandbox
    // ended); one runsc failed to delete keeps its record (else its sandbox
    // would run on with nothing left that names it).
    if (c.status != 0 && !known) c = Captured{};
    if (c.status == 0) forget(root, id);
  }
  print(c);
  return c.status;
}

}  // namespace sbx::ocirt
