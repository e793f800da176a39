#include "ocirt/container.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/log.h"
#include "ocirt/cgroup_paths.h"
#include "ocirt/gvisor_delegate.h"
#include "runtime/linux/pty.h"
#include "runtime/linux/userns.h"
#include "ocirt/hooks.h"
#include "ocirt/rootfs.h"
#include "ocirt/state_store.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/rlimits.h"
#include "runtime/linux/seccomp.h"
#include "runtime/native/child_channel.h"

namespace sbx::ocirt {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream f(path);
  if (!f) throw_errno(what + ": open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Written whole or not at all (tmp + rename): podman and containerd read it
// as soon as create returns.
void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  std::string tmp = path + ".sbx-tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!(f << pid) || !f.flush()) throw_errno("write --pid-file " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) < 0) throw_errno("rename --pid-file to " + path);
}

// --- the sync channel between sbx-runc and the container's process -----------
// SOCK_SEQPACKET, one message per step:
//   parent → child  'G'          ids mapped, cgroup joined: go on
//   child  → parent 'M'          mounts done (before pivot_root): run createRuntime hooks
//   parent → child  'H' <state>  hooks done; the state JSON for the in-container hooks
//   child  → parent 'R'          ready: about to block on the exec fifo
//   child  → parent 'E' <code byte> <message>   failed
void send_msg(int fd, char tag, const std::string& body = {}) {
  std::string m(1, tag);
  m += body;
  if (::send(fd, m.data(), m.size(), MSG_NOSIGNAL) < 0) throw_errno("sync with the container's process");
}

std::string recv_msg(int fd) {
  std::string buf(1 << 16, '\0');
  for (;;) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("sync with the container's process");
    buf.resize(static_cast<size_t>(n));
    return buf;  // "" : EOF
  }
}

// Sends the pty master over the console socket (runc's utils.SendFile: the
// pty's name as the payload, the fd as SCM_RIGHTS).
void send_console(int sock, int master, const std::string& name) {
  char cbuf[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>(name.data()), name.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = sizeof cbuf;
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &master, sizeof(int));
  if (::sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) throw_errno("send the pty master over --console-socket");
}

int connect_console(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw Error("--console-socket " + path + ": path too long for a unix socket");
  std::memcpy(a.sun_path, path.c_str(), path.size());
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw_errno("socket for --console-socket");
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
    int e = errno;
    ::close(s);
    throw_errno("connect to --console-socket " + path, e);
  }
  return s;
}

// In the container (after pivot_root): a pty from its devpts; the master goes
// to the caller, the slave becomes the controlling terminal and fds 0-2.
void setup_terminal(int console_sock) {
  runtime::PtyPair pty;
  try {
    pty = runtime::open_pty();  // the native backend's steps
  } catch (const Error& e) {
    throw Error(std::string("process.terminal: ") + e.what(), e.err());
  }
  char name[64] = "/dev/pts/?";
  ::ptsname_r(pty.master, name, sizeof name);
  send_console(console_sock, pty.master, name);
  ::close(pty.master);
  ::close(console_sock);
  if (::setsid() < 0) throw_errno("setsid");
  runtime::make_controlling_terminal(pty.slave);
}

// The last steps of every container process (init and exec), in runc's order
// (standard_init_linux.go, init_linux.go finalizeNamespace): rlimits; the
// seccomp profile first when no_new_privs is off (loading it then needs
// CAP_SYS_ADMIN); bounding set; groups, gid, uid; the capability sets;
// no_new_privs and the profile last otherwise; execve.
// The linux.seccomp profile, loaded by sbx's one loader (errors name config.json).
void load_seccomp(const Seccomp& profile) {
  try {
    runtime::load_seccomp_profile(profile);
  } catch (const Error& e) {
    throw Error(std::string("config.json: ") + e.what(), e.err());
  }
}

// The last steps of every container process (init and exec), in runc's order
// (standard_init_linux.go, init_linux.go finalizeNamespace): rlimits; the
// seccomp profile first when no_new_privs is off (loading it then needs
// CAP_SYS_ADMIN); bounding set; groups, gid, uid; the capability sets;
// no_new_privs and the profile last otherwise; then sbx's exec step (signals
// reset, execve: runtime::exec_file).
[[noreturn]] void finish_and_exec(const Process& p, const std::optional<Seccomp>& sc, const std::string& exe) {
  runtime::apply_rlimits(p.rlimits);
  if (sc && !p.no_new_privileges) load_seccomp(*sc);
  runtime::drop_bounding(runtime::parse_capabilities(p.capabilities.bounding));
  std::vector<gid_t> groups(p.additional_gids.begin(), p.additional_gids.end());
  if (::setgroups(groups.size(), groups.data()) < 0 && errno != EPERM) throw_errno("setgroups (process.user.additionalGids)");
  if (::setresgid(p.gid, p.gid, p.gid) < 0) throw_errno("setresgid " + std::to_string(p.gid) + " (process.user.gid)");
  if (::setresuid(p.uid, p.uid, p.uid) < 0) throw_errno("setresuid " + std::to_string(p.uid) + " (process.user.uid)");
  cap_t caps = cap_init();
  auto set = [&](const std::vector<std::string>& names, cap_flag_t flag) {
    auto v = runtime::parse_capabilities(names);
    std::vector<cap_value_t> cv(v.begin(), v.end());
    if (!cv.empty()) cap_set_flag(caps, flag, static_cast<int>(cv.size()), cv.data(), CAP_SET);
  };
  set(p.capabilities.effective, CAP_EFFECTIVE);
  set(p.capabilities.permitted, CAP_PERMITTED);
  set(p.capabilities.inheritable, CAP_INHERITABLE);
  int rc = cap_set_proc(caps);
  int e = errno;
  cap_free(caps);
  if (rc < 0) throw_errno("set process.capabilities", e);
  // An ambient capability needs to be permitted and inheritable too; runc
  // skips (with a warning) those that are not, and so does this.
  for (int c : runtime::parse_capabilities(p.capabilities.ambient)) ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
  ::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
  if (p.no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) throw_errno("PR_SET_NO_NEW_PRIVS");
  if (sc && p.no_new_privileges) load_seccomp(*sc);
  runtime::exec_file(exe, p.args, p.env);
}

// process.args[0] as the container will exec it (PATH from process.env), run
// in the container's root before the process is let go, so that a missing
// command fails create (runc does the same), in runc's words.
std::string resolve_exe(const Process& p) { return runtime::resolve_command(p.args[0], p.env); }

// linux.namespaces types (config-linux.md) and their clone(2) flags.
int ns_flag(const std::string& type) {
  static const std::pair<const char*, int> kTypes[] = {
      {"pid", CLONE_NEWPID}, {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS},       {"ipc", CLONE_NEWIPC},
      {"uts", CLONE_NEWUTS}, {"user", CLONE_NEWUSER},   {"cgroup", CLONE_NEWCGROUP}};
  for (const auto& [name, flag] : kTypes)
    if (type == name) return flag;
  return 0;
}

// --preserve-fds N: the caller's fds 3 .. 3+N-1 pass to the container's
// process (runc's ExtraFiles; systemd socket activation's LISTEN_FDS);
// everything above them is closed at exec.
void keep_only_preserved_fds(unsigned preserve) noexcept {
  ::syscall(SYS_close_range, 3 + preserve, ~0U, CLOSE_RANGE_CLOEXEC);
  for (unsigned fd = 3; fd < 3 + preserve; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, 0);
}

// Refuses --preserve-fds N when one of the fds it names is not open: sbx-runc's
// own fds would then take that number and reach the container.
void check_preserved_fds(unsigned preserve) {
  if (preserve > 65536) throw Error("--preserve-fds " + std::to_string(preserve) + ": too many (at most 65536)");
  for (unsigned fd = 3; fd < 3 + preserve; ++fd)
    if (::fcntl(static_cast<int>(fd), F_GETFD) < 0)
      throw Error("--preserve-fds " + std::to_string(preserve) + ": fd " + std::to_string(fd) +
                  " is not open in the caller (pass fds 3 to " + std::to_string(2 + preserve) + ")", EBADF);
}

struct ChildArgs {
  const Config* cfg;
  const CreateRequest* req;
  int fifo_fd;  ///< O_PATH of ROOT/<id>/exec.fifo
  int sync;
  std::vector<std::pair<int, int>> join;  ///< (fd, CLONE_NEW*) namespaces joined by path
  CgroupPaths cgroup;
  bool new_userns, new_cgroupns;
};

// The container's process, from clone to the exec fifo to execve. Errors go
// to sbx-runc as 'E' messages until it is ready; after that (start) to the
// container's stderr.
[[noreturn]] void child_main(const ChildArgs& a) {
  const Config& c = *a.cfg;
  bool ready = false;
  try {
    // Nothing the caller left open beyond stdio (and --preserve-fds) reaches the container.
    keep_only_preserved_fds(a.req->preserve_fds);
    if (recv_msg(a.sync) != "G") ::_exit(1);  // sbx-runc gave up
    if (a.new_userns) {
      if (::setresgid(0, 0, 0) < 0 || ::setresuid(0, 0, 0) < 0) throw_errno("become root in the new user namespace (linux.uidMappings needs an entry for 0)");
    }
    for (auto [fd, flag] : a.join)
      if (::setns(fd, flag) < 0) throw_errno("join a namespace of linux.namespaces by path");
    if (a.new_cgroupns) runtime::enter_cgroup_namespace();
    // A uts namespace of its own, new or joined by path (runc sets the name in
    // a joined one too); never the host's.
    if (c.find_namespace("uts")) {
      if (!c.hostname.empty() && ::sethostname(c.hostname.data(), c.hostname.size()) < 0) throw_errno("sethostname (hostname)");
      if (!c.domainname.empty() && ::setdomainname(c.domainname.data(), c.domainname.size()) < 0) throw_errno("setdomainname (domainname)");
    } else if (!c.hostname.empty() || !c.domainname.empty()) {
      throw Error("config.json: hostname: needs a uts namespace in linux.namespaces");
    }
    prepare_rootfs(c, a.cgroup, a.new_userns);
    send_msg(a.sync, 'M');
    std::string h = recv_msg(a.sync);
    if (h.empty() || h[0] != 'H') ::_exit(1);
    std::string state = h.substr(1);
    run_hooks(c.hooks.create_container, "createContainer", state);
    int console = -1;
    if (c.process.terminal) console = connect_console(a.req->console_socket);
    int fifo = a.fifo_fd;  // opened by sbx-runc: in a user namespace the state dir is out of reach
    enter_rootfs(c, a.req->no_pivot);
    finish_rootfs(c);
    if (c.process.terminal) setup_terminal(console);
    if (::chdir(c.process.cwd.c_str()) < 0) throw_errno("chdir to process.cwd " + c.process.cwd);
    ::umask(c.process.umask.value_or(022));
    std::string exe = resolve_exe(c.process);
    send_msg(a.sync, 'R');
    ready = true;
    // Blocks until `start` opens the fifo for reading.
    std::string self = "/proc/self/fd/" + std::to_string(fifo);
    int w = ::open(self.c_str(), O_WRONLY | O_CLOEXEC);
    if (w < 0) throw_errno("open the exec fifo");
    if (::write(w, "0", 1) != 1) throw_errno("write the exec fifo");
    ::close(w);
    ::close(fifo);
    if (!c.hooks.start_container.empty()) {
      json s = json::parse(state);
      s["status"] = "running";
      run_hooks(c.hooks.start_container, "startContainer", s.dump());
    }
    finish_and_exec(c.process, c.seccomp, exe);
  } catch (const std::exception& e) {
    int code = kExitSbxFailed;
    if (auto* se = dynamic_cast<const Error*>(&e)) code = se->exit_code();
    if (!ready) {
      runtime::send_error(a.sync, code, e.what());
    } else {
      std::string m = std::string("sbx-runc: ") + e.what() + "\n";
      ssize_t n = ::write(2, m.data(), m.size());
      (void)n;
    }
    ::_exit(code);
  }
}

void remove_tree(const std::string& dir) noexcept {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Waits (up to `ms`) for a process that is not our child to end.
bool wait_gone(pid_t pid, uint64_t start, int ms) {
  int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pfd >= 0) {
    if (!same_process(pid, start)) {
      ::close(pfd);
      return true;
    }
    pollfd p{pfd, POLLIN, 0};
    int rc = ::poll(&p, 1, ms);
    ::close(pfd);
    return rc > 0;
  }
  return !same_process(pid, start);
}

std::string container_state_json(const ContainerState& st, const std::string& status) {
  return state_json(st, status, false);
}

Config stored_config(const std::string& root, const ContainerState& st) {
  return parse_config(read_text(container_dir(root, st.id) + "/config.json", "container " + st.id), st.bundle);
}

}  // namespace

pid_t create(const std::string& root, const CreateRequest& req) {
  check_id(req.id);
  std::error_code ec;
  std::string bundle = fs::absolute(req.bundle, ec).lexically_normal().string();
  while (bundle.size() > 1 && bundle.back() == '/') bundle.pop_back();
  std::string text = read_text(bundle + "/config.json", "bundle " + bundle);
  Config cfg = parse_config(text, bundle);
  if (cfg.seccomp) {
    try {
      runtime::check_seccomp_profile(*cfg.seccomp);
    } catch (const Error& e) {
      throw Error(std::string("config.json: ") + e.what(), e.err());
    }
  }
  check_preserved_fds(req.preserve_fds);
  // The isolation chosen per container (issue 20): gVisor containers are
  // runsc's, with the caller's command line.
  if (auto it = cfg.annotations.find(kRuntimeAnnotation); it != cfg.annotations.end() && it->second != "native") {
    if (it->second != "gvisor")
      throw Error(std::string("config.json: annotations[\"") + kRuntimeAnnotation + "\"] = \"" + it->second +
                  "\": use native or gvisor");
    if (req.preserve_fds)
      throw Error("--preserve-fds: runsc create cannot pass fds to a gVisor container (dev.sbx.runtime: gvisor); "
                  "pass them to exec instead, or run the container natively");
    std::vector<std::string> args = {"create"};
    if (!req.pid_file.empty()) args.insert(args.end(), {"--pid-file", req.pid_file});
    if (!req.console_socket.empty()) args.insert(args.end(), {"--console-socket", req.console_socket});
    int rc = gvisor_create(root, req.id, cfg, text, req.runsc_global_args, args);
    if (rc != 0) throw Error("runsc create failed (exit status " + std::to_string(rc) + "; its message is above)");
    return 0;
  }
  if (cfg.process.terminal && req.console_socket.empty())
    throw Error("config.json: process.terminal is true but no --console-socket was given");
  struct stat rs{};
  if (::stat(cfg.root_path.c_str(), &rs) < 0 || !S_ISDIR(rs.st_mode))
    throw Error("config.json: root.path: " + cfg.root_path + " does not exist or is not a directory", ENOENT);

  fs::create_directories(root, ec);
  if (ec) throw Error("create the runtime root " + root + ": " + ec.message());
  ::chmod(root.c_str(), 0700);
  std::string dir = container_dir(root, req.id);
  if (::mkdir(dir.c_str(), 0700) < 0) {
    if (errno == EEXIST) throw Error("container \"" + req.id + "\" already exists (in " + root + ")", EEXIST);
    throw_errno("create " + dir);
  }
  ContainerState st;
  st.id = req.id;
  st.bundle = bundle;
  st.oci_version = cfg.oci_version;
  st.created = now_rfc3339();
  st.annotations = cfg.annotations;

  pid_t pid = -1;
  int pidfd = -1;
  int sv[2] = {-1, -1};
  int fifo_fd = -1;
  CgroupPaths cg;
  std::vector<int> ns_fds;
  auto cleanup = [&]() noexcept {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    cg.destroy();
    for (int fd : ns_fds) ::close(fd);
    if (fifo_fd >= 0) ::close(fifo_fd);
    if (pidfd >= 0) ::close(pidfd);
    if (sv[0] >= 0) ::close(sv[0]);
    if (sv[1] >= 0) ::close(sv[1]);
    remove_tree(dir);
  };
  try {
    {
      std::ofstream f(dir + "/config.json");
      if (!(f << text) || !f.flush()) throw_errno("write " + dir + "/config.json");
    }
    std::string fifo = dir + "/exec.fifo";
    if (::mkfifo(fifo.c_str(), 0622) < 0) throw_errno("mkfifo " + fifo);
    // The container's root opens it (as runc: owned by the host id of its root).
    for (const auto& m : cfg.uid_mappings)
      if (m.container_id == 0)
        for (const auto& g : cfg.gid_mappings)
          if (g.container_id == 0 && ::chown(fifo.c_str(), m.host_id, g.host_id) < 0) throw_errno("chown " + fifo);
    fifo_fd = ::open(fifo.c_str(), O_PATH | O_CLOEXEC);
    if (fifo_fd < 0) throw_errno("open the exec fifo " + fifo);
    // The default devices (runtime-spec config-linux.md) are allowed after the
    // caller's rules, as runc's AllowedDevices: mknod of any, the standard
    // nodes, ptys.
    Resources res = cfg.resources;
    const spec::DeviceRule defaults[] = {
        {true, 'c', -1, -1, "m"}, {true, 'b', -1, -1, "m"}, {true, 'c', 1, 3, "rwm"}, {true, 'c', 1, 5, "rwm"},
        {true, 'c', 1, 7, "rwm"}, {true, 'c', 1, 8, "rwm"}, {true, 'c', 1, 9, "rwm"}, {true, 'c', 5, 0, "rwm"},
        {true, 'c', 5, 1, "rwm"}, {true, 'c', 5, 2, "rwm"}, {true, 'c', 136, -1, "rwm"}};
    if (!res.devices.empty()) res.devices.insert(res.devices.end(), std::begin(defaults), std::end(defaults));
    cg = CgroupPaths::create(cfg.cgroups_path, req.id, res);
    st.cgroup_dirs = cg.dirs;

    ChildArgs a{&cfg, &req, fifo_fd, -1, {}, cg, false, false};
    uint64_t flags = 0;
    int pid_join = -1;
    for (const auto& n : cfg.namespaces) {
      int f = ns_flag(n.type);
      if (n.path.empty()) {
        if (f == CLONE_NEWCGROUP) a.new_cgroupns = true;  // after joining the cgroup
        else flags |= static_cast<uint64_t>(f);
        continue;
      }
      int fd = ::open(n.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw_errno("config.json: linux.namespaces[" + n.type + "].path: open " + n.path);
      ns_fds.push_back(fd);
      if (f == CLONE_NEWPID) pid_join = fd;
      else a.join.push_back({fd, f});
    }
    a.new_userns = flags & CLONE_NEWUSER;
    if (a.new_userns && !a.join.empty())
      throw Error("config.json: linux.namespaces: joining namespaces by path together with a new user namespace is not supported by sbx-runc");
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw_errno("socketpair");
    a.sync = sv[1];
    // A pid namespace joined by path: our children are born in it.
    int own_pidns = -1;
    if (pid_join >= 0) {
      own_pidns = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
      if (::setns(pid_join, CLONE_NEWPID) < 0) throw_errno("config.json: linux.namespaces[pid].path: setns");
    }
    pid = runtime::clone_sandbox(flags, &pidfd);
    if (pid == 0) {
      ::close(sv[0]);
      child_main(a);
    }
    if (own_pidns >= 0) {
      ::setns(own_pidns, CLONE_NEWPID);
      ::close(own_pidns);
    }
    ::close(sv[1]);
    sv[1] = -1;
    st.pid = pid;
    st.pid_start = process_start_time(pid);
    save_state(root, st);  // "creating": delete --force can clean up after a killed create
    if (a.new_userns) {
      // The native backend's writer (one write(2) per map, as the kernel wants).
      try {
        runtime::write_id_maps(pid, cfg.uid_mappings, cfg.gid_mappings);
      } catch (const Error& e) {
        throw Error(std::string("config.json: linux.uidMappings/gidMappings: ") + e.what(), e.err());
      }
    }
    cg.add(pid);
    if (cfg.process.oom_score_adj) {
      std::ofstream f("/proc/" + std::to_string(pid) + "/oom_score_adj");
      if (!(f << *cfg.process.oom_score_adj) || !f.flush()) throw_errno("write process.oomScoreAdj");
    }
    send_msg(sv[0], 'G');
    auto fail_from_child = [&](const std::string& m) {
      if (m.empty()) throw Error("the container's process ended during create (no message)");
      if (m[0] == 'E' && m.size() >= 2) throw Error(m.substr(2), 0, static_cast<unsigned char>(m[1]));
      throw Error("unexpected message from the container's process during create");
    };
    std::string m = recv_msg(sv[0]);
    if (m != "M") fail_from_child(m);
    std::string creating = container_state_json(st, "creating");
    run_hooks(cfg.hooks.prestart, "prestart", creating);
    run_hooks(cfg.hooks.create_runtime, "createRuntime", creating);
    send_msg(sv[0], 'H', creating);
    m = recv_msg(sv[0]);
    if (m != "R") fail_from_child(m);
    write_pid_file(req.pid_file, pid);
  } catch (...) {
    cleanup();
    throw;
  }
  for (int fd : ns_fds) ::close(fd);
  ::close(fifo_fd);
  ::close(pidfd);
  ::close(sv[0]);
  return pid;
}

int run(const std::string& root, const CreateRequest& req) {
  std::error_code ec;
  std::string bundle = fs::absolute(req.bundle, ec).lexically_normal().string();
  std::string text = read_text(bundle + "/config.json", "bundle " + bundle);
  Config cfg = parse_config(text, bundle);
  if (auto it = cfg.annotations.find(kRuntimeAnnotation); it != cfg.annotations.end() && it->second == "gvisor") {
    check_preserved_fds(req.preserve_fds);
    if (req.preserve_fds)
      throw Error("--preserve-fds: runsc cannot pass fds to a gVisor container's first process (dev.sbx.runtime: gvisor)");
    std::vector<std::string> args = {"run"};
    if (!req.pid_file.empty()) args.insert(args.end(), {"--pid-file", req.pid_file});
    if (!req.console_socket.empty()) args.insert(args.end(), {"--console-socket", req.console_socket});
    return gvisor_create(root, req.id, cfg, text, req.runsc_global_args, args);
  }
  pid_t pid = create(root, req);
  // From the start (the process runs and may print) to the wait, a signal is
  // held and then forwarded, as for exec: not fatal to sbx-runc, which would
  // leave the container running.
  ForwardedSignalsBlocked held;
  try {
    start(root, req.id);
  } catch (...) {
    try {
      remove(root, req.id, true);
    } catch (const Error&) {
    }
    throw;
  }
  int code = wait_forwarding_signals(pid, &held.old);
  remove(root, req.id, true);
  return code;
}

void start(const std::string& root, const std::string& id) {
  ContainerState st = load_state(root, id);
  std::string status = current_status(root, st);
  if (status != "created") throw Error("cannot start container \"" + id + "\": it is " + status + ", not created");
  std::string fifo = container_dir(root, id) + "/exec.fifo";
  int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_errno("open the exec fifo " + fifo);
  int pfd = static_cast<int>(::syscall(SYS_pidfd_open, st.pid, 0));
  bool got = false;
  for (int i = 0; i < 600 && !got; ++i) {  // the process opens its end as soon as it runs
    pollfd p[2] = {{fd, POLLIN, 0}, {pfd, POLLIN, 0}};
    int rc = ::poll(p, pfd >= 0 ? 2 : 1, 100);
    if (rc > 0 && (p[0].revents & POLLIN)) {
      char b;
      got = ::read(fd, &b, 1) == 1;
    }
    if (rc > 0 && pfd >= 0 && (p[1].revents & POLLIN) && !got) break;
  }
  ::close(fd);
  if (pfd >= 0) ::close(pfd);
  if (!got) throw Error("cannot start container \"" + id + "\": its process ended before it was started");
  ::unlink(fifo.c_str());
  try {
    Config cfg = stored_config(root, st);
    run_hooks(cfg.hooks.poststart, "poststart", container_state_json(st, "running"));
  } catch (const Error& e) {
    log::warn(std::string("container ") + id + ": " + e.what());
  }
}

std::string state(const std::string& root, const std::string& id) {
  ContainerState st = load_state(root, id);
  return state_json(st, current_status(root, st), true);
}

void kill(const std::string& root, const std::string& id, int sig, bool all) {
  ContainerState st = load_state(root, id);
  std::string status = current_status(root, st);
  if (status == "stopped" && !all) throw Error("container \"" + id + "\": container not running");
  CgroupPaths cg = CgroupPaths::from_dirs(st.cgroup_dirs);
  if (all) {
    cg.signal_all(sig);
    if (sig == SIGKILL && status == "paused") cg.freeze(false);
    return;
  }
  if (::kill(st.pid, sig) < 0) throw_errno("kill container \"" + id + "\" (pid " + std::to_string(st.pid) + ")");
}

void remove(const std::string& root, const std::string& id, bool force) {
  check_id(id);
  // As runc: --force of a container that does not exist (never fully
  // created, or deleted already) succeeds, and clears a half-made dir.
  if (force && ::access((container_dir(root, id) + "/state.json").c_str(), F_OK) != 0) {
    remove_tree(container_dir(root, id));
    return;
  }
  ContainerState st = load_state(root, id);
  std::string status = current_status(root, st);
  if ((status == "running" || status == "paused") && !force)
    throw Error("cannot delete container \"" + id + "\" that is not stopped: " + status + " (use --force)");
  CgroupPaths cg = CgroupPaths::from_dirs(st.cgroup_dirs);
  if (status != "stopped") {
    if (status == "paused") {
      try {
        cg.freeze(false);
      } catch (...) {
      }
    }
    cg.signal_all(SIGKILL);
    if (st.pid > 0 && same_process(st.pid, st.pid_start)) ::kill(st.pid, SIGKILL);
    if (st.pid > 0 && !wait_gone(st.pid, st.pid_start, 10000))
      throw Error("delete container \"" + id + "\": its process " + std::to_string(st.pid) + " did not end after SIGKILL");
  }
  auto left = cg.destroy();
  try {
    Config cfg = stored_config(root, st);
    run_hooks(cfg.hooks.poststop, "poststop", container_state_json(st, "stopped"));
  } catch (const Error& e) {
    log::warn(std::string("container ") + id + ": " + e.what());
  }
  remove_tree(container_dir(root, id));
  if (!left.empty()) throw Error("delete container \"" + id + "\": could not remove its cgroup " + left.front());
}

int exec(const std::string& root, const ExecRequest& req) {
  ContainerState st = load_state(root, req.id);
  std::string status = current_status(root, st);
  if (status != "running" && status != "created")
    throw Error("cannot exec in container \"" + req.id + "\": it is " + status);
  Config cfg = stored_config(root, st);
  Process p;
  if (!req.process_file.empty()) {
    p = parse_process(read_text(req.process_file, "--process"), "--process " + req.process_file);
  } else {
    if (req.args.empty()) throw Error("exec: give the command to run (ARGS) or --process FILE");
    p = cfg.process;
    p.args = req.args;
    p.terminal = req.tty;
  }
  if (!req.cwd.empty()) p.cwd = req.cwd;
  for (const auto& e : req.env) p.env.push_back(e);
  if (!req.user.empty()) {
    auto colon = req.user.find(':');
    try {
      p.uid = static_cast<uint32_t>(std::stoul(req.user.substr(0, colon)));
      if (colon != std::string::npos) p.gid = static_cast<uint32_t>(std::stoul(req.user.substr(colon + 1)));
    } catch (...) {
      throw Error("exec --user '" + req.user + "': use UID[:GID] (numbers)");
    }
  }
  if (p.terminal && req.console_socket.empty()) throw Error("exec: a terminal (-t or process.terminal) needs --console-socket");
  check_preserved_fds(req.preserve_fds);

  // The container's namespaces, other than those we already share.
  const std::pair<const char*, int> kinds[] = {{"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
                                               {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP}, {"mnt", CLONE_NEWNS}};
  std::vector<std::pair<int, int>> join;
  auto differs = [&](const char* name) {
    struct stat a{}, b{};
    std::string theirs = "/proc/" + std::to_string(st.pid) + "/ns/" + name;
    if (::stat(theirs.c_str(), &a) < 0) throw_errno("exec: " + theirs);
    std::string ours = std::string("/proc/self/ns/") + name;
    return ::stat(ours.c_str(), &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev;
  };
  for (auto [name, flag] : kinds) {
    if (!differs(name)) continue;
    std::string path = "/proc/" + std::to_string(st.pid) + "/ns/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("exec: open " + path);
    join.push_back({fd, flag});
  }
  int pidns = -1, own_pidns = -1;
  if (differs("pid")) {
    pidns = ::open(("/proc/" + std::to_string(st.pid) + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
    own_pidns = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (pidns < 0 || ::setns(pidns, CLONE_NEWPID) < 0) throw_errno("exec: join the container's pid namespace");
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw_errno("socketpair");
  CgroupPaths cg = CgroupPaths::from_dirs(st.cgroup_dirs);
  ForwardedSignalsBlocked held;  // a signal before the wait is forwarded, not fatal
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    held.restore_in_child();
    ::close(sv[0]);
    try {
      keep_only_preserved_fds(req.preserve_fds);
      if (recv_msg(sv[1]) != "G") ::_exit(1);
      int console = p.terminal ? connect_console(req.console_socket) : -1;
      for (auto [fd, flag] : join)
        if (::setns(fd, flag) < 0) throw_errno("exec: join the container's namespaces");
      if (p.terminal) setup_terminal(console);
      if (::chdir(p.cwd.c_str()) < 0) throw_errno("exec: chdir to " + p.cwd);
      std::string exe = resolve_exe(p);
      finish_and_exec(p, cfg.seccomp, exe);
    } catch (const std::exception& e) {
      int code = kExitSbxFailed;
      if (auto* se = dynamic_cast<const Error*>(&e)) code = se->exit_code();
      runtime::send_error(sv[1], code, e.what());
      ::_exit(code);
    }
  }
  if (own_pidns >= 0) {
    ::setns(own_pidns, CLONE_NEWPID);
    ::close(own_pidns);
  }
  if (pidns >= 0) ::close(pidns);
  for (auto [fd, flag] : join) ::close(fd);
  ::close(sv[1]);
  try {
    cg.add(pid);
    if (p.oom_score_adj) {
      std::ofstream f("/proc/" + std::to_string(pid) + "/oom_score_adj");
      f << *p.oom_score_adj;
    }
    send_msg(sv[0], 'G');
    std::string m = recv_msg(sv[0]);  // EOF: execve closed the child's end
    if (!m.empty() && m[0] == 'E' && m.size() >= 2) throw Error(m.substr(2), 0, static_cast<unsigned char>(m[1]));
  } catch (...) {
    ::close(sv[0]);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw;
  }
  ::close(sv[0]);
  write_pid_file(req.pid_file, pid);
  if (req.detach) return 0;
  return wait_forwarding_signals(pid, &held.old);
}

namespace {
volatile sig_atomic_t g_forward_to = 0;
void forward_signal(int sig) {
  if (g_forward_to > 0) ::kill(static_cast<pid_t>(g_forward_to), sig);
}
}  // namespace

// As runc: every signal the caller gets goes on to the process, but SIGCHLD
// (ours) and SIGWINCH (a terminal's size goes through the pty).
static bool forwarded(int s) {
  return !(s == SIGKILL || s == SIGSTOP || s == SIGCHLD || s == SIGWINCH || (s > 31 && s < SIGRTMIN));
}

ForwardedSignalsBlocked::ForwardedSignalsBlocked() {
  sigset_t set;
  sigemptyset(&set);
  for (int s = 1; s < NSIG; ++s)
    if (forwarded(s)) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, &old);
}

ForwardedSignalsBlocked::~ForwardedSignalsBlocked() { ::sigprocmask(SIG_SETMASK, &old, nullptr); }

void ForwardedSignalsBlocked::restore_in_child() const noexcept { ::sigprocmask(SIG_SETMASK, &old, nullptr); }

int wait_forwarding_signals(pid_t pid, const sigset_t* unblock) {
  g_forward_to = pid;
  struct sigaction sa{}, old[NSIG];
  sa.sa_handler = forward_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  std::vector<int> sigs;
  for (int s = 1; s < NSIG; ++s) {
    if (!forwarded(s)) continue;
    if (::sigaction(s, &sa, &old[s]) == 0) sigs.push_back(s);
  }
  // Held signals arrive now, with the handlers in place.
  if (unblock) ::sigprocmask(SIG_SETMASK, unblock, nullptr);
  int status_raw = 0;
  while (::waitpid(pid, &status_raw, 0) < 0 && errno == EINTR) {
  }
  for (int s : sigs) ::sigaction(s, &old[s], nullptr);
  g_forward_to = 0;
  if (WIFEXITED(status_raw)) return WEXITSTATUS(status_raw);
  return 128 + WTERMSIG(status_raw);
}

std::vector<pid_t> pids(const std::string& root, const std::string& id) {
  ContainerState st = load_state(root, id);
  return CgroupPaths::from_dirs(st.cgroup_dirs).procs();
}

void pause(const std::string& root, const std::string& id, bool paused) {
  ContainerState st = load_state(root, id);
  std::string status = current_status(root, st);
  if (paused && status != "running") throw Error("cannot pause container \"" + id + "\": it is " + status);
  if (!paused && status != "paused") throw Error("cannot resume container \"" + id + "\": it is " + status + ", not paused");
  CgroupPaths::from_dirs(st.cgroup_dirs).freeze(paused);
}

void update(const std::string& root, const std::string& id, const Resources& res) {
  ContainerState st = load_state(root, id);
  CgroupPaths::from_dirs(st.cgroup_dirs).apply(res);
}

std::vector<ListEntry> list(const std::string& root) {
  std::vector<ListEntry> out;
  for (const auto& id : list_ids(root)) {
    try {
      ContainerState st = load_state(root, id);
      std::string s = current_status(root, st);
      out.push_back({id, s, st.bundle, st.created, s == "stopped" ? 0 : st.pid});
    } catch (const Error&) {
    }
  }
  return out;
}

std::string features_json() {
  json j;
  j["ociVersionMin"] = "1.0.0";
  j["ociVersionMax"] = "1.1.0";
  j["hooks"] = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
  j["mountOptions"] = {"async", "atime", "bind", "defaults", "dev", "diratime", "dirsync", "exec", "mand", "noatime",
                       "nodev", "nodiratime", "noexec", "nomand", "norelatime", "nostrictatime", "nosuid", "private",
                       "rbind", "relatime", "remount", "ro", "rprivate", "rshared", "rslave", "runbindable", "rw",
                       "shared", "slave", "strictatime", "suid", "sync", "unbindable"};
  json linux;
  linux["namespaces"] = {"cgroup", "ipc", "mount", "network", "pid", "user", "uts"};
  std::vector<std::string> caps;
  for (int c = 0; c <= CAP_LAST_CAP; ++c) {
    char* n = cap_to_name(c);
    std::string s = n ? n : "";
    cap_free(n);
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    caps.push_back(s);
  }
  linux["capabilities"] = caps;
  linux["cgroup"] = {{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false}};
  linux["seccomp"] = {{"enabled", true},
                      {"actions", {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                                   "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"}},
                      {"operators", {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
                                     "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"}},
                      {"archs", {"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"}}};
  linux["apparmor"] = {{"enabled", false}};
  linux["selinux"] = {{"enabled", false}};
  j["linux"] = linux;
  j["annotations"] = {{"org.opencontainers.runc.version", "sbx-runc " SBX_VERSION}};
  return j.dump(2);
}

}  // namespace sbx::ocirt
