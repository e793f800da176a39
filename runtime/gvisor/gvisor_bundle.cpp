// Shared gVisor bundle helpers (runtime/gvisor/gvisor_bundle.h); moved out of
// gvisor_backend.cpp so that long-lived sandboxes use the same code.
#include "runtime/gvisor/gvisor_bundle.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "common/fs.h"
#include "runtime/linux/mounts.h"
#include "runtime/linux/userns.h"
#include "runtime/user.h"

namespace sbx::runtime::gvisor {

bool is_executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

bool sandbox_has_gpus(const std::vector<std::string>& runsc_flags, const std::string& bundle) {
  if (std::find(runsc_flags.begin(), runsc_flags.end(), "--nvproxy") != runsc_flags.end()) return true;
  if (bundle.empty() || !fs::exists(bundle + "/config.json")) return false;
  try {
    auto cfg = nlohmann::json::parse(fs::read_file(bundle + "/config.json"));
    if (cfg.contains("linux") && cfg["linux"].contains("devices"))
      for (const auto& d : cfg["linux"]["devices"])
        if (d.value("path", "").rfind("/dev/nvidia", 0) == 0) return true;
  } catch (const nlohmann::json::exception& e) {
    throw Error("checkpoint: " + bundle + "/config.json is corrupt: " + e.what());
  }
  return false;
}

/// Extracts the "msg" values of runsc's JSON log lines at level error.
std::string runsc_errors(const std::string& log) {
  std::string out;
  size_t pos = 0;
  while ((pos = log.find("\"msg\":\"", pos)) != std::string::npos) {
    size_t line_end = log.find('\n', pos);
    std::string line = log.substr(pos, line_end == std::string::npos ? std::string::npos : line_end - pos);
    pos += 7;
    if (line.find("\"level\":\"error\"") == std::string::npos) continue;
    size_t end = line.find("\",\"", 7);
    std::string msg = line.substr(7, end == std::string::npos ? std::string::npos : end - 7);
    for (size_t q; (q = msg.find("\\\"")) != std::string::npos;) msg.erase(q, 1);  // JSON \" -> "
    out += msg + "\n";
  }
  return out;
}

/// Builds the bundle's rootfs at `target` (in the caller's private mount
/// namespace): an overlay of the image layers (bottom first in `layers`;
/// overlayfs wants the top first in lowerdir) with its upper dir on a small
/// private tmpfs at `scratch`. runsc's gofer creates mount points for volumes
/// there; the sandbox's own writes go to runsc's memory overlay
/// (--overlay2=root:memory), so the tmpfs stays tiny. Both vanish with the namespace.
/// `disk_bytes` (--disk): runsc writes through its gofer into this overlay
/// instead (--overlay2=none), and the tmpfs gets that size, so the host kernel
/// answers ENOSPC beyond it. (runsc 20240729 takes no size for its memory
/// overlay: the memory limit bounds it, ending in an OOM kill. A file store of
/// its in a size-limited tmpfs, root:self or root:dir=, answered ENOSPC to
/// write(2) and SIGBUS to the task writing through a shared mapping; the
/// sandbox lived on.)
void mount_rootfs(const std::vector<std::string>& layers, const std::string& scratch, const std::string& target,
                  uint64_t disk_bytes) {
  if (layers.empty()) throw Error("cannot build the rootfs: the image has no layers");
  const std::string tmpfs = "mode=0700," + (disk_bytes ? tmpfs_size_option(disk_bytes) : std::string("size=16m"));
  if (::mount("tmpfs", scratch.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, tmpfs.c_str()) < 0)
    throw_errno("mount tmpfs on " + scratch);
  const std::string upper = scratch + "/upper", work = scratch + "/work";
  if (::mkdir(upper.c_str(), 0755) < 0 || ::mkdir(work.c_str(), 0700) < 0) throw_errno("mkdir in " + scratch);
  std::string lower;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    if (!lower.empty()) lower += ':';
    lower += *it;
  }
  std::string data = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work;
  if (::mount("overlay", target.c_str(), "overlay", 0, data.c_str()) < 0)
    throw_errno("mount overlay of " + std::to_string(layers.size()) + " layers on " + target);
}

/// Resolves process.user against the image's /etc/passwd and /etc/group
/// under `rootfs` (as the native backend does inside the sandbox) and sets
/// uid, gid, supplementary groups and a default HOME.
void resolve_process_user(Process& p, const std::string& rootfs) {
  ResolvedUser u = resolve_user(p.user, rootfs);
  p.uid = u.uid;
  p.gid = u.gid;
  p.additional_gids = u.groups;
  bool has_home = false;
  for (const auto& e : p.env) has_home |= e.rfind("HOME=", 0) == 0;
  if (!has_home) p.env.push_back("HOME=" + u.home);
}

/// The cgroups runsc makes for linux.cgroupsPath "/NAME": NAME at the root of
/// every mounted hierarchy (v1 controllers, and the unified one).
std::vector<std::string> runsc_cgroup_dirs(const std::string& name) {
  std::vector<std::string> dirs = {"/sys/fs/cgroup/" + name};
  if (DIR* d = ::opendir("/sys/fs/cgroup")) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
      dirs.push_back(std::string("/sys/fs/cgroup/") + e->d_name + "/" + name);
    }
    ::closedir(d);
  }
  return dirs;
}

/// --pids-limit inside gVisor: runsc applies linux.resources.pids to the
/// sentry's host threads, not to the sandbox's tasks, so the limit is also
/// given to gVisor's own kernel as RLIMIT_NPROC (which it enforces for every
/// user, root included, since the sandbox has no CAP_SYS_RESOURCE): a fork
/// bomb or a thread flood stops at the limit with EAGAIN, as on the native
/// backend. An explicit lower --ulimit nproc wins. The host cgroup keeps a
/// larger pids limit as a backstop.
GvisorPidsBounds gvisor_pids_bounds(int64_t limit) {
  GvisorPidsBounds b;
  b.nproc = static_cast<uint64_t>(limit);
  // The host pids cgroup holds the sentry, the gofer and (ptrace platform) a
  // host stub per guest task: at the guest's own limit it would kill the
  // whole sandbox, so the host limit leaves head room for them.
  b.host_pids_max = limit * 3 + 256;
  return b;
}

void apply_pids_limit_as_nproc(SandboxSpec& s) {
  if (!s.resources.pids_limit || *s.resources.pids_limit <= 0) return;
  const GvisorPidsBounds b = gvisor_pids_bounds(*s.resources.pids_limit);
  // The host limit gets its head room with an explicit --ulimit nproc too: at
  // the guest's own limit the sentry and gofer cannot start their threads.
  s.resources.pids_limit = b.host_pids_max;
  for (auto& r : s.process.rlimits) {
    if (r.type != "RLIMIT_NPROC") continue;
    r.soft = std::min(r.soft, b.nproc);
    r.hard = std::min(r.hard, b.nproc);
    return;
  }
  s.process.rlimits.push_back({"RLIMIT_NPROC", b.nproc, b.nproc});
}

std::vector<std::string> runsc_sandbox_flags(NetworkMode network, RootWrites writes, bool nvproxy) {
  std::vector<std::string> f = {network == NetworkMode::None      ? "--network=none"
                                : network == NetworkMode::Private || network == NetworkMode::User ? "--network=sandbox"
                                                                  : "--network=host"};
  if (writes == RootWrites::Memory) f.push_back("--overlay2=root:memory");
  else if (writes == RootWrites::Host) f.push_back("--overlay2=none");
  if (nvproxy) f.push_back("--nvproxy");
  return f;
}

void throw_if_command_error(const std::string& errors, const std::string& cmd) {
  if (errors.find("failed to load") == std::string::npos &&
      errors.find("error finding executable") == std::string::npos &&
      errors.find("executable file not found") == std::string::npos)
    return;
  if (errors.find("no such file or directory") != std::string::npos ||
      errors.find("not found") != std::string::npos)
    throw Error(ErrorKind::NotFound,
                "exec: \"" + cmd + "\": executable file not found in $PATH", ENOENT, kExitNotFound);
  if (errors.find("permission denied") != std::string::npos)
    throw Error("exec: \"" + cmd + "\": permission denied", EACCES, kExitCannotExec);
}

FileOutput::FileOutput(int fd) noexcept {
  struct stat sb;
  int fl = fd < 0 ? -1 : ::fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_APPEND) || ::fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) return;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return;  // then runsc writes to the file itself
  target = fd;
  read_end = p[0];
  write_end = p[1];
}

FileOutput::~FileOutput() {
  if (read_end >= 0) ::close(read_end);
  if (write_end >= 0) ::close(write_end);
}

void FileOutput::parent_side() noexcept {
  if (write_end >= 0) ::close(write_end);
  write_end = -1;
  if (read_end >= 0) ::fcntl(read_end, F_SETFL, O_NONBLOCK);
}

bool FileOutput::pump() noexcept {
  if (read_end < 0) return false;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(read_end, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {
      ::close(read_end);
      read_end = -1;
      return false;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(target, buf + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += w;
    }
  }
}

void FileOutput::drain(int ms) noexcept {
  for (int waited = 0; read_end >= 0 && waited < ms; waited += 20) {
    struct pollfd p {read_end, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    if (!pump()) break;
  }
}

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

FileOutputPump::FileOutputPump(FileOutput& out, FileOutput& err) : out_(out), err_(err) {
  if (out_.read_end < 0 && err_.read_end < 0) return;
  thread_ = std::thread([this] {
    for (;;) {
      struct pollfd p[2] = {{out_.read_end, POLLIN, 0}, {err_.read_end, POLLIN, 0}};
      if (p[0].fd < 0 && p[1].fd < 0) return;  // both at EOF
      int64_t stop = stop_at_.load();
      if (stop && steady_ms() >= stop) return;
      if (::poll(p, 2, 20) <= 0) continue;
      if (p[0].revents) out_.pump();
      if (p[1].revents) err_.pump();
    }
  });
}

void FileOutputPump::finish(int ms) noexcept {
  if (!thread_.joinable()) return;
  stop_at_.store(steady_ms() + std::max(ms, 1));
  thread_.join();
}

void idmap_volumes_for_gvisor(std::vector<Mount>& mounts, const std::string& at_dir) {
  int n = 0;
  for (auto& m : mounts) {
    if (m.type != "bind") continue;
    bool ro = false, host = false;
    for (const auto& o : m.options) {
      ro = ro || o == "ro";
      host = host || o == "idmap=host";
    }
    std::erase(m.options, std::string("idmap=host"));
    if (ro || host) continue;
    struct stat st {};
    if (::stat(m.source.c_str(), &st) < 0) throw_errno("volume source " + m.source);
    int ns = host_ids_volume_userns(st.st_uid, st.st_gid);
    int tree = -1;
    try {
      tree = open_idmapped_tree(m.source, ns, true, false);
    } catch (...) {
      ::close(ns);
      throw;
    }
    ::close(ns);
    std::string at = at_dir + "/vol" + std::to_string(n++);
    int made = 0;
    if (S_ISDIR(st.st_mode)) {
      made = ::mkdir(at.c_str(), 0700);
    } else {
      int f = ::open(at.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      made = f < 0 ? -1 : ::close(f);
    }
    if ((made < 0 && errno != EEXIST) || ::move_mount(tree, "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) {
      int e = errno;
      ::close(tree);
      throw_errno("attach the idmapped volume " + m.source + " at " + at, e);
    }
    ::close(tree);
    m.source = at;
  }
}

}  // namespace sbx::runtime::gvisor

namespace sbx::runtime {

// (Defined here, not in gvisor_backend.cpp, so that sbx-runc links it without
// the backend's network code and its libraries.)
std::string find_runsc(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (!gvisor::is_executable(explicit_path))
      throw Error(ErrorKind::NotFound,
                  "runsc not found at " + explicit_path + ": not an executable file; check --runsc");
    return explicit_path;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  size_t i = 0;
  while (i <= dirs.size()) {
    size_t j = dirs.find(':', i);
    if (j == std::string::npos) j = dirs.size();
    std::string cand = dirs.substr(i, j - i) + "/runsc";
    if (j > i && gvisor::is_executable(cand)) return cand;
    i = j + 1;
  }
  throw Error(ErrorKind::NotFound,
              "runsc not found on PATH: the gvisor runtime needs gVisor's runsc; install the Debian package 'runsc' or pass --runsc PATH");
}

}  // namespace sbx::runtime
