#include "ocirt/gvisor_delegate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/error.h"
#include "ocirt/state_store.h"

namespace sbx::ocirt {

namespace {

std::string marker(const std::string& root, const std::string& id) { return root + "/.gvisor/" + id; }

int run_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for runsc");
  if (pid == 0) {
    ::execvp(a[0], a.data());
    std::string m = "sbx-runc: exec " + argv[0] + ": " + std::strerror(errno) + " (set SBX_RUNSC or install gVisor)\n";
    ssize_t n = ::write(2, m.data(), m.size());
    (void)n;
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
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

}  // namespace

std::string runsc_binary() {
  const char* e = std::getenv("SBX_RUNSC");
  return e && *e ? e : "runsc";
}

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

int gvisor_create(const std::string& root, const std::string& id, const Config& cfg,
                  const std::vector<std::string>& global_args, const std::vector<std::string>& args) {
  check_id(id);
  ::mkdir(root.c_str(), 0700);
  ::mkdir((root + "/.gvisor").c_str(), 0700);
  if (::access((container_dir(root, id) + "/state.json").c_str(), F_OK) == 0)
    throw Error("container \"" + id + "\" already exists (in " + root + ")", EEXIST);
  std::vector<std::string> flags;
  // A new network namespace without a path asks for no network (podman
  // --network none, ctr without --net-host): runsc's own sandbox network
  // needs interfaces to copy from a namespace it is given.
  const Namespace* net = cfg.find_namespace("network");
  if (net && net->path.empty()) flags.push_back("--network=none");
  else if (!net) flags.push_back("--network=host");
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
  if (n != static_cast<ssize_t>(text.size())) {
    ::unlink(m.c_str());
    throw_errno("write " + m);
  }
  std::vector<std::string> cmd = {"create"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  int rc = run_and_wait(runsc_argv(root, flags, global_args, cmd));
  if (rc != 0) ::unlink(m.c_str());
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
  int rc = run_and_wait(runsc_argv(root, flags, global_args, args));
  if (!args.empty() && args[0] == "delete") {
    bool force = false;
    for (const auto& a : args) force |= (a == "-f" || a == "--force" || a == "-force");
    if (rc == 0 || force) ::unlink(marker(root, id).c_str());
    if (force) rc = 0;
  }
  return rc;
}

}  // namespace sbx::ocirt
