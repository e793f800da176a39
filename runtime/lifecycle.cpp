#include "runtime/lifecycle.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/backend.h"
#include "runtime/linux/cgroup_removal.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/sandbox_network.h"
#include "runtime/linux/userns.h"

namespace sbx::runtime {

namespace {

std::string short_id(const std::string& dir) {
  auto slash = dir.rfind('/');
  return dir.substr(slash == std::string::npos ? 0 : slash + 1, 12);
}

// Waits up to `ms` (<0: forever) for the pidfd's process to exit.
// flock(2) on a directory itself, held by whoever empties a .trash-/.new- dir
// (gc passes over one that is held, runtime/state.h). -1 when it is gone.
struct DirLock {
  int fd = -1;
  DirLock(const std::string& path, bool wait) {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) ::close(std::exchange(fd, -1));
  }
  ~DirLock() {
    if (fd >= 0) ::close(fd);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  /// False once the directory has been removed (by whoever held it before us).
  bool still_there() const {
    struct stat sb {};
    return fd >= 0 && ::fstat(fd, &sb) == 0 && sb.st_nlink > 0;
  }
};

bool wait_pidfd(int pidfd, int ms) {
  struct pollfd p {pidfd, POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

}  // namespace

void kill_sandbox(const std::string& dir, int sig) {
  SandboxState st = read_state(dir);
  int fd = open_init_pidfd(st);
  if (fd < 0) throw Error(ErrorKind::Conflict, "sandbox " + short_id(dir) + " is not running; see 'sbx ps -a'");
  // The init cannot record a SIGKILL itself: record it first (the init's own
  // record, if it is ending right now anyway, wins the link(2) race).
  if (sig == SIGKILL) write_end_if_absent(dir, EndRecord{"killed", 137, SIGKILL, 0});
  int r = static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
  int e = errno;
  if (r == 0 && sig == SIGKILL) wait_pidfd(fd, 5000);
  ::close(fd);
  if (r < 0 && e != ESRCH) throw_errno("send signal " + std::to_string(sig) + " to sandbox " + short_id(dir), e);
}

void stop_sandbox(const std::string& dir, std::chrono::milliseconds grace, int sig, Backend* backend) {
  SandboxState st = read_state(dir);
  int fd = open_init_pidfd(st);
  if (fd < 0) return;  // already ended
  // (gVisor: the monitor forwards the signal to the first process.)
  ::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0);
  if (!wait_pidfd(fd, static_cast<int>(grace.count()))) {
    if (backend) backend->end_all(SandboxRef{dir, st});
    write_end_if_absent(dir, EndRecord{"killed", 137, SIGKILL, 0});
    ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
    wait_pidfd(fd, 10000);
  }
  ::close(fd);
}

std::optional<EndRecord> wait_sandbox(const std::string& dir, std::chrono::milliseconds timeout) {
  SandboxState st = read_state(dir);
  int fd = open_init_pidfd(st);
  if (fd >= 0) {
    bool ended = wait_pidfd(fd, timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1);
    ::close(fd);
    if (!ended) return std::nullopt;
  } else if (st.status == "creating") {
    // Not started yet (or its creator died): poll the state.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      SandboxInfo info = inspect_dir(dir);
      if (info.status != "creating") return info.status == "running" ? wait_sandbox(dir, timeout) : info.end;
      if (timeout.count() > 0 && std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return inspect_dir(dir).end;
}

int destroy_cgroup_dirs(const std::vector<std::string>& dirs) noexcept {
  int e = remove_cgroup_dirs(dirs);
  release_sandboxes_parent();  // the last sandbox takes sbx's parent cgroup with it
  return e;
}

void remove_sandbox(const std::string& run_root, const std::string& id, bool force, Backend* backend) {
  std::string dir = sandbox_dir(run_root, id);
  std::string sid = id.substr(0, 12);
  if (!fs::exists(dir)) return;  // removed meanwhile
  std::optional<fs::FileLock> lock;
  try {
    lock.emplace(dir + "/lock");
  } catch (const Error& e) {
    if (e.err() == ENOENT) return;  // renamed away by another rm
    throw;
  }
  if (!fs::exists(dir + "/state.json") && !fs::exists(dir)) return;  // removed while we waited
  SandboxState st;
  bool have_state = true;
  try {
    st = read_state(dir);
  } catch (const Error&) {
    have_state = false;  // killed before it wrote one: just the directory
  }
  if (have_state) {
    SandboxInfo info = inspect_dir(dir);
    if ((info.status == "running" || info.status == "creating") && !force)
      throw Error(ErrorKind::Conflict, "sandbox " + sid + " is " + info.status + "; stop it first ('sbx stop " + sid +
                  "') or remove it with 'sbx rm -f " + sid + "'");
    if (info.status == "creating" && st.creator_pid > 0 && st.creator_pid != ::getpid() && !st.creator_shared) {
      // Its creator is alive: it would go on building. Kill it too (unless the
      // creator is us, cleaning up after its own failed create, e.g. a name
      // that is taken: then it would SIGKILL itself and leave the dir behind;
      // or a server, creator_shared: its create fails once the init below is
      // killed or the dir is gone, and its other work goes on).
      ::kill(st.creator_pid, SIGKILL);
    }
    // The backend's own way first (gVisor: runsc kill --all), then the init.
    if (backend && state_alive(st)) backend->end_all(SandboxRef{dir, st});
    if (int fd = open_init_pidfd(st); fd >= 0) {
      write_end_if_absent(dir, EndRecord{"killed", 137, SIGKILL, 0});
      ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
      wait_pidfd(fd, 10000);
      ::close(fd);
    }
    crash_point("rm-killed");
    // What the backend holds besides the cgroups (gVisor: the monitor is
    // gone, its runsc died with it; runsc's state, any process left and
    // runsc's cgroups go now).
    if (backend) backend->release(SandboxRef{dir, st});
    if (int e = destroy_cgroup_dirs(st.cgroups))
      throw_errno("remove the cgroups of sandbox " + sid + " (" + (st.cgroups.empty() ? "" : st.cgroups[0]) + ")", e);
  }
  crash_point("rm-cgroups");
  // Out of sight first: a crash from here on leaves only RUN_ROOT/.trash-<id>.
  std::string trash = run_root + "/.trash-" + id;
  // Held until the tree is gone, so that the gc of another sbx does not empty
  // the same .trash- dir beside us (each would fail on what the other removed).
  DirLock removing(dir, true);
  if (::rename(dir.c_str(), trash.c_str()) < 0 && errno != ENOENT) throw_errno("rename " + dir + " to " + trash);
  crash_point("rm-renamed");
  if (have_state) release_name(run_root, st.name, id);
  release_id_slot(run_root, id, trash);
  if (int e = remove_tree(trash)) throw_errno("remove " + trash + "; 'sbx gc' will retry", e);
  // Its network state (a --network private lease), whoever made it: a
  // `sbx serve` that created it lives on, so gc_networks would not see it.
  release_sandbox_networks(id);
}

namespace {

// One sandbox dir of gc: removed (with `removed` told) when its sandbox is
// gone. Reads its state.json and /proc/PID/stat of its init, owner and creator.
void gc_sandbox(const std::string& run_root, const std::string& id, BackendOf backend_of,
                std::vector<std::string>& removed) {
  // Never a sandbox someone may still want: a created sandbox (it has a
  // creator_pid) is removed only when its create died half-way ("dead"); an
  // ended one keeps its end record and log until `sbx rm`.
  std::string dir = sandbox_dir(run_root, id);
  bool remove = false;
  std::unique_ptr<Backend> backend;
  try {
    // (Settled: a create that has just finished and exited is not "dead".)
    SandboxState st = read_state_settled(dir);
    // A create that died before it recorded the sandbox as running: its
    // sandbox must not live on, even where its init still does.
    const bool orphan = st.creator_pid != 0 && st.status == "creating" && !creator_alive(st);
    if (state_alive(st) && !orphan) return;
    if (backend_of) {
      BackendOptions bo;
      bo.run_root = run_root;
      bo.backend_of = backend_of;
      backend = backend_of(st, bo);
    }
    if (st.creator_pid != 0 && st.status != "creating") {
      // A created sandbox that ended: its record (end, log) stays for
      // ps -a / rm; what its backend still holds goes (gVisor, whose
      // monitor was killed: its runsc state, processes and cgroups).
      if (backend)
        if (std::string what = backend->release(SandboxRef{dir, st}); !what.empty())
          removed.push_back(dir + " (" + what + ")");
      return;
    }
    if (st.creator_pid == 0) {
      // A `sbx run` sandbox: its own sbx removes it when the run ends, so it
      // is a leftover only once that sbx is gone too (killed). Its init
      // alone being dead means nothing: that sbx may be about to clean up.
      // (owner_pid 0: a state of an older sbx, which did not record it.)
      remove = st.owner_pid <= 0 || process_start_time(st.owner_pid) != st.owner_start;
    } else if (st.status == "creating") {
      remove = orphan;
    }
  } catch (const Error&) {
    // No state.json: a start in progress, or one killed before it wrote it.
    struct stat sb {};
    remove = ::stat(dir.c_str(), &sb) == 0 && ::time(nullptr) - sb.st_mtime > 10;
  }
  if (!remove) return;
  try {
    remove_sandbox(run_root, id, true, backend.get());
    removed.push_back(dir);
  } catch (const Error& e) {
    log::warn("gc: " + std::string(e.what()));
  }
}

// One dot-entry of the run root: a half-removed sandbox (.trash-<id>), a
// create that died before its dir got its id (.new-<id>), a killed batch's
// files (.batch-<pid>), a user-namespace slot whose owner is gone (.userns-N).
void gc_dot_entry(const std::string& run_root, const char* name, std::vector<std::string>& removed) {
  bool trash = std::strncmp(name, ".trash-", 7) == 0;
  bool fresh = std::strncmp(name, ".new-", 5) == 0;
  std::string path = run_root + "/" + name;
  if (std::strncmp(name, ".batch-", 7) == 0) {
    // A `sbx batch` (engine/batch.h) keeps its tasks' files in .batch-<pid>
    // while it runs: gone with a batch that was killed (a live pid, even a
    // reused one, keeps it: the conservative side).
    pid_t owner = static_cast<pid_t>(std::atoi(name + 7));
    if (owner > 0 && process_start_time(owner) == 0 && remove_tree(path) == 0) removed.push_back(path);
    return;
  }
  if (std::strncmp(name, ".userns-", 8) == 0) {
    if (release_stale_id_slot(run_root, name)) removed.push_back(path);
    return;
  }
  if (!trash && !fresh) return;
  if (fresh) {
    // A create that died before its dir got its id: only once its creator is gone.
    bool building;
    try {
      auto st = read_state(path);
      building = creator_alive(st);
    } catch (const Error&) {
      struct stat sb {};
      building = ::stat(path.c_str(), &sb) == 0 && ::time(nullptr) - sb.st_mtime <= 10;
    }
    if (building) return;
  }
  // Someone (an `sbx rm`, another gc) is emptying it right now: theirs.
  DirLock mine(path, false);
  if (!mine.still_there()) return;
  try {
    destroy_cgroup_dirs(read_state(path).cgroups);
  } catch (const Error&) {
  }
  if (trash) release_id_slot(run_root, name + 7, path);
  if (remove_tree(path) == 0) removed.push_back(path);
}

// The run root's gc cursor: the readdir position (d_off) the last bounded
// step stopped at, kept as an xattr of the run root itself (no file in it).
constexpr const char* kGcCursorXattr = "trusted.sbx.gc-cursor";

}  // namespace

std::vector<std::string> gc(const std::string& run_root, BackendOf backend_of) {
  std::vector<std::string> removed;
  for (const auto& id : list_ids(run_root)) gc_sandbox(run_root, id, backend_of, removed);
  // Half-removed sandboxes, killed batches, stale id slots.
  if (DIR* d = ::opendir(run_root.c_str())) {
    std::vector<std::string> dots;
    while (struct dirent* e = ::readdir(d))
      if (e->d_name[0] == '.' && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        dots.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& n : dots) gc_dot_entry(run_root, n.c_str(), removed);
  }
  // Slots recorded by an older sbx without a link get one.
  for (auto& p : gc_id_slots(run_root, true)) removed.push_back(p);
  if (DIR* d = ::opendir((run_root + "/.names").c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') {
        // .<name>.lock of a `sbx run --name` that was killed: no one holds it.
        size_t len = std::strlen(e->d_name);
        if (len < 7 || std::strcmp(e->d_name + len - 5, ".lock") != 0) continue;
        int fd = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        struct stat a {}, b {};
        // Unlinked while we hold its lock, and only if the name is still this file.
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &a) == 0 &&
            ::fstatat(::dirfd(d), e->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino)
          ::unlinkat(::dirfd(d), e->d_name, 0);
        ::close(fd);
        continue;
      }
      std::string link = run_root + "/.names/" + e->d_name;
      char target[128];
      ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = 0;
      if (!fs::exists(sandbox_dir(run_root, target))) ::unlink(link.c_str());
    }
    ::closedir(d);
  }
  // sbx-* cgroups no sandbox dir names any more (a create killed before it
  // recorded them, or a `sbx run` killed with SIGKILL).
  for (auto& c : gc_stale_cgroups()) removed.push_back(c);
  for (auto& n : gc_networks()) removed.push_back("network " + n);
  return removed;
}

std::vector<std::string> gc_step(const std::string& run_root, BackendOf backend_of, size_t max_bytes) {
  std::vector<std::string> removed;
  int fd = ::open(run_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return removed;
  int64_t cursor = 0;
  if (::fgetxattr(fd, kGcCursorXattr, &cursor, sizeof cursor) != sizeof cursor) cursor = 0;
  // getdents64 of at most max_bytes in all from where the last step stopped,
  // around to the start at the end of the dir: a few entries, whatever the
  // number of sandboxes.
  std::vector<char> buf(std::max<size_t>(max_bytes, 512));
  std::vector<std::string> names;
  int64_t next = cursor;
  size_t budget = buf.size();
  bool wrapped = false;
  if (::lseek(fd, cursor, SEEK_SET) < 0) {
    // (A cursor the file system no longer knows.)
    next = 0;
    wrapped = ::lseek(fd, 0, SEEK_SET) == 0;
  }
  while (budget >= 128) {
    long n = ::syscall(SYS_getdents64, fd, buf.data(), budget);
    if (n < 0) break;
    if (n == 0) {  // the end: around again, once
      next = 0;
      if (wrapped || ::lseek(fd, 0, SEEK_SET) != 0) break;
      wrapped = true;
      continue;
    }
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf.data() + off);
      if (std::find(names.begin(), names.end(), e->d_name) == names.end()) names.emplace_back(e->d_name);
      next = e->d_off;
      off += e->d_reclen;
    }
    budget -= static_cast<size_t>(n);
  }
  (void)::fsetxattr(fd, kGcCursorXattr, &next, sizeof next, 0);
  ::close(fd);
  for (const auto& name : names) {
    if (name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos)
      gc_sandbox(run_root, name, backend_of, removed);
    else if (name[0] == '.' && name != "." && name != "..")
      gc_dot_entry(run_root, name.c_str(), removed);
  }
  return removed;
}

namespace {

// Copies BASE.1 then BASE of `dir` to `out`; with `follow`, keeps reading
// BASE (across rotations) until the sandbox has ended.
void read_log_files(const std::string& dir, const std::string& base, bool follow,
                    const std::function<void(const char*, size_t)>& out) {
  auto dump = [&](int fd) {
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out(buf, static_cast<size_t>(n));
  };
  const std::string cur = dir + "/" + base, old = cur + ".1";
  if (int fd = ::open(old.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW); fd >= 0) {
    dump(fd);
    ::close(fd);
  }
  int fd = ::open(cur.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) dump(fd);
  if (!follow) {
    if (fd >= 0) ::close(fd);
    return;
  }
  SandboxState st = read_state(dir);
  int pidfd = open_init_pidfd(st);
  for (;;) {
    bool alive = pidfd >= 0 && !wait_pidfd(pidfd, 100);
    if (fd >= 0) dump(fd);
    // Rotated (BASE -> BASE.1)? Finish the old file, continue with the new one.
    struct stat a {}, b {};
    bool rotated = fd >= 0 && ::fstat(fd, &a) == 0 && (::stat(cur.c_str(), &b) < 0 || a.st_ino != b.st_ino);
    if (fd < 0 || rotated) {
      int nfd = ::open(cur.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (nfd >= 0) {
        if (fd >= 0) {
          dump(fd);
          ::close(fd);
        }
        fd = nfd;
        dump(fd);
      }
    }
    if (!alive) break;
  }
  if (fd >= 0) ::close(fd);
  if (pidfd >= 0) ::close(pidfd);
}

}  // namespace

void read_log_records(const std::string& dir, bool follow, const std::function<void(const LogRecord&)>& out) {
  auto exists = [&](const char* f) { return ::access((dir + "/" + f).c_str(), F_OK) == 0; };
  const bool records = exists(kRecordLog) || exists(kRecordLogOld);
  const bool raw = exists("log") || exists("log.1");
  // A raw log: a sandbox from before the record format (or a restored one
  // that was given its old output): all of it as stdout, without times.
  if (raw) {
    read_log_files(dir, "log", follow && !records, [&](const char* p, size_t n) {
      LogRecord r;
      r.partial = true;
      r.text = std::string_view(p, n);
      out(r);
    });
    if (!records) return;  // (followed to its end above)
  }
  // Records arrive in reads of any size: cut at newlines, keep the rest.
  std::string pending;
  read_log_files(dir, kRecordLog, follow, [&](const char* p, size_t n) {
    pending.append(p, n);
    size_t from = 0;
    for (size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1) {
      LogRecord r;
      if (parse_log_record(std::string_view(pending).substr(from, nl + 1 - from), r)) out(r);
    }
    pending.erase(0, from);
  });
}

void read_logs(const std::string& dir, bool follow, const std::function<void(const char*, size_t)>& out) {
  read_log_records(dir, follow, [&](const LogRecord& r) { out(r.text.data(), r.text.size()); });
}

}  // namespace sbx::runtime
