#include "runtime/state.h"
#include "runtime/inspect_status.h"
#include "runtime/linux/cgroup_hierarchy.h"

#include "runtime/linux/cgroup_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::runtime {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string sandbox_dir(const std::string& run_root, const std::string& id) { return run_root + "/" + id; }

std::string new_sandbox_id() {
  unsigned char b[32];
  if (::getrandom(b, sizeof b, 0) != sizeof b) throw_errno("getrandom");
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char c : b) {
    id += hex[c >> 4];
    id += hex[c & 15];
  }
  return id;
}

void touch_activity(const char* state_dir) noexcept {
  char path[4096];
  std::snprintf(path, sizeof path, "%s/activity", state_dir);
  int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    ::futimens(fd, nullptr);
    ::close(fd);
  }
}

void write_state(const std::string& dir, const SandboxState& st) {
  nlohmann::json j = {{"version", 1},
                      {"id", st.id},
                      {"name", st.name},
                      {"image_id", st.image_id},
                      {"image_ref", st.image_ref},
                      {"runtime", st.runtime},
                      {"status", st.status},
                      {"pid", st.pid},
                      {"pid_start", st.pid_start},
                      {"created_ms", st.created_ms},
                      {"started_ms", st.started_ms},
                      {"cgroups", st.cgroups},
                      {"labels", st.labels},
                      {"command", st.command},
                      {"timeout_ms", st.timeout_ms},
                      {"idle_timeout_ms", st.idle_timeout_ms},
                      {"creator_pid", st.creator_pid},
                      {"creator_start", st.creator_start},
                      {"creator_shared", st.creator_shared},
                      {"owner_pid", st.owner_pid},
                      {"owner_start", st.owner_start}};
  // Temp file + rename (readers never see half a file) but no fsync: the run
  // root is volatile state (tmpfs /run), and an fsync on a disk-backed run
  // root costs milliseconds on every sandbox start. The temp name is per
  // process: several sbx may write one sandbox's state (under its lock).
  std::string data = j.dump(2) + "\n", path = dir + "/state.json";
  std::string tmp = dir + "/.state.json.tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("create " + tmp);
  ssize_t n = ::write(fd, data.data(), data.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    ::unlink(tmp.c_str());
    throw_errno("write " + tmp, n < 0 ? e : EIO);
  }
  if (::rename(tmp.c_str(), path.c_str()) < 0) {
    e = errno;
    ::unlink(tmp.c_str());
    throw_errno("rename " + tmp + " to " + path, e);
  }
}

SandboxState read_state(const std::string& dir) {
  std::string text = fs::read_file(dir + "/state.json");
  try {
    auto j = nlohmann::json::parse(text);
    SandboxState st;
    st.id = j.value("id", "");
    st.name = j.value("name", "");
    st.image_id = j.value("image_id", "");
    st.image_ref = j.value("image_ref", "");
    st.runtime = j.value("runtime", "native");
    st.status = j.value("status", "");
    st.pid = j.value("pid", 0);
    st.pid_start = j.value("pid_start", uint64_t{0});
    st.created_ms = j.value("created_ms", int64_t{0});
    st.started_ms = j.value("started_ms", int64_t{0});
    st.cgroups = j.value("cgroups", std::vector<std::string>{});
    st.labels = j.value("labels", std::map<std::string, std::string>{});
    st.command = j.value("command", std::vector<std::string>{});
    st.timeout_ms = j.value("timeout_ms", int64_t{0});
    st.idle_timeout_ms = j.value("idle_timeout_ms", int64_t{0});
    st.creator_pid = j.value("creator_pid", 0);
    st.creator_start = j.value("creator_start", uint64_t{0});
    st.creator_shared = j.value("creator_shared", false);
    st.owner_pid = j.value("owner_pid", 0);
    st.owner_start = j.value("owner_start", uint64_t{0});
    return st;
  } catch (const nlohmann::json::exception& e) {
    throw Error("malformed " + dir + "/state.json: " + e.what() + "; remove the sandbox with 'sbx rm -f' or 'sbx gc'");
  }
}

int open_init_pidfd(const SandboxState& st) noexcept {
  if (st.pid <= 0) return -1;
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, st.pid, 0));
  if (fd < 0) return -1;
  if (process_start_time(st.pid) != st.pid_start) {
    ::close(fd);
    return -1;
  }
  return fd;
}

uint64_t process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // Field 2 (comm) may hold spaces and ')': fields resume after the last ')'.
  char* close = std::strrchr(buf, ')');
  if (!close || close[1] != ' ') return 0;
  const char* p = close + 2;
  if (*p == 'Z' || *p == 'X') return 0;  // field 3: state; a zombie is dead
  for (int field = 3; field < 22 && *p; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return 0;
    ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

bool state_alive(const SandboxState& st) {
  if (st.pid <= 0) return false;
  uint64_t t = process_start_time(st.pid);
  return t != 0 && (st.pid_start == 0 || t == st.pid_start);
}

bool creator_alive(const SandboxState& st) {
  return st.creator_pid > 0 && process_start_time(st.creator_pid) == st.creator_start;
}

SandboxState read_state_settled(const std::string& dir) {
  SandboxState st = read_state(dir);
  if (st.status == "creating" && !creator_alive(st)) st = read_state(dir);
  return st;
}

std::optional<EndRecord> read_end(const std::string& dir) {
  std::string text;
  try {
    text = fs::read_file(dir + "/end");
  } catch (const Error&) {
    return std::nullopt;
  }
  EndRecord r;
  char reason[32] = {0};
  long long ms = 0;
  unsigned long long u[4] = {0, 0, 0, 0};
  int n = std::sscanf(text.c_str(), "%31s %d %d %lld %llu %llu %llu %llu", reason, &r.exit_code, &r.signal, &ms, &u[0],
                      &u[1], &u[2], &u[3]);
  if (n < 1) return std::nullopt;
  r.reason = reason;
  r.ended_ms = ms;
  if (n == 8) r.usage = ResourceUsage{u[0], u[1], u[2], u[3], 0};
  return r;
}

void write_end_record_json(const std::string& path, const EndRecord& end, uint64_t oom_kills, uint64_t pids_max_hits,
                           const ResourceUsage& usage) {
  const int64_t ms = end.ended_ms ? end.ended_ms : now_ms();
  char when[64];
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  ::gmtime_r(&secs, &tm);
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  nlohmann::json j = {{"Reason", end.reason},     {"ExitCode", end.exit_code}, {"Signal", end.signal},
                      {"FinishedAt", when},       {"OomKills", oom_kills},     {"PidsMaxHits", pids_max_hits},
                      {"CpuMs", usage.cpu_ms},    {"MaxRssBytes", usage.max_rss_bytes},
                      {"IoReadBytes", usage.io_read_bytes}, {"IoWriteBytes", usage.io_write_bytes},
                      {"DurationMs", usage.duration_ms}};
  fs::write_file_atomic(path, j.dump(2) + "\n", 0644);
}

bool write_end_if_absent(const std::string& dir, const EndRecord& end) {
  std::string tmp = dir + "/end.tmp." + std::to_string(::getpid());
  std::string text = end.reason + " " + std::to_string(end.exit_code) + " " + std::to_string(end.signal) + " " +
                     std::to_string(end.ended_ms ? end.ended_ms : now_ms()) + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  // link(2) fails with EEXIST when a record is there: the first one wins, atomically.
  ok = ok && ::link(tmp.c_str(), (dir + "/end").c_str()) == 0;
  ::unlink(tmp.c_str());
  return ok;
}

static bool is_id(const char* s) {
  if (std::strlen(s) != 64) return false;
  for (const char* p = s; *p; ++p)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

std::vector<std::string> list_ids(const std::string& run_root) {
  std::vector<std::string> ids;
  DIR* d = ::opendir(run_root.c_str());
  if (!d) return ids;
  while (struct dirent* e = ::readdir(d))
    if (is_id(e->d_name)) ids.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

namespace {

/// inspect_dir's first part; `all_oom` counts OOM kills of a running sandbox too.
SandboxInfo inspect_state(const std::string& dir, bool all_oom) {
  SandboxInfo info;
  info.dir = dir;
  info.state = read_state_settled(dir);
  info.end = read_end(dir);
  const auto& st = info.state;
  bool alive = state_alive(st);
  if (info.end && !alive) {
    info.status = "exited";
  } else if (st.status == "creating") {
    info.status = creator_alive(st) ? "creating" : "dead";
  } else if (st.status == "running") {
    info.status = alive ? "running" : "exited";
    if (!alive && !info.end) {
      // The init vanished without a record: killed from outside (kill -9,
      // host OOM killer) — it could not write why.
      info.end = EndRecord{"killed", 137, 9, 0};
    }
  } else {
    info.status = alive ? "running" : "exited";
  }
  for (const auto& cg : st.cgroups) {
    // v1: memory.oom_control "oom_kill N"; v2: memory.events "oom_kill N".
    // (A v1 hierarchy of another controller has neither: not opened.)
    if (!all_oom && !info.end) break;  // (a listing shows the kills of ended ones only)
    if (!cgroup_may_have(cg, "memory")) continue;
    for (const char* f : {"/memory.oom_control", "/memory.events"}) {
      try {
        std::string text = fs::read_file(cg + f);
        auto pos = text.find("oom_kill ");
        if (pos != std::string::npos) info.oom_kills += std::strtoull(text.c_str() + pos + 9, nullptr, 10);
        break;  // (a memory cgroup has one of the two: v1's or v2's)
      } catch (const Error&) {
      }
    }
  }
  if (info.end && info.end->reason == "signal" && info.end->signal == 9 && info.oom_kills > 0) info.end->reason = "oom";
  return info;
}

}  // namespace

SandboxInfo inspect_status(const std::string& dir) { return inspect_state(dir, false); }

SandboxInfo inspect_dir(const std::string& dir) {
  SandboxInfo info = inspect_state(dir, true);
  const auto& st = info.state;
  CgroupUsage cg = read_cgroup_usage(st.cgroups);
  if (info.status == "running") {
    info.usage = live_usage(cg, st.started_ms ? st.started_ms : st.created_ms);
  } else if (info.end) {
    if (info.end->usage) info.usage = *info.end->usage;
    if (cg.memory_peak) info.usage.max_rss_bytes = *cg.memory_peak;  // the whole sandbox's, not one process's
    const int64_t from = st.started_ms ? st.started_ms : st.created_ms;
    if (from && info.end->ended_ms > from) info.usage.duration_ms = static_cast<uint64_t>(info.end->ended_ms - from);
  }
  return info;
}

std::string resolve_id(const std::string& run_root, const std::string& ref) {
  if (ref.empty()) throw Error("empty sandbox id or name");
  if (is_id(ref.c_str()) && fs::exists(sandbox_dir(run_root, ref))) return ref;
  // A name?
  char target[128];
  ssize_t n = ::readlink((run_root + "/.names/" + ref).c_str(), target, sizeof target - 1);
  if (n > 0) {
    target[n] = 0;
    if (is_id(target) && fs::exists(sandbox_dir(run_root, target))) return target;
  }
  std::string found;
  bool hex = std::all_of(ref.begin(), ref.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (hex) {
    for (const auto& id : list_ids(run_root)) {
      if (id.compare(0, ref.size(), ref) != 0) continue;
      if (!found.empty())
        throw Error(ErrorKind::InvalidArgument,
                    "sandbox id prefix '" + ref + "' is ambiguous; give more characters or the full id");
      found = id;
    }
  }
  if (found.empty()) throw Error(ErrorKind::SandboxNotFound,
              "no such sandbox '" + ref + "' (in " + run_root + "); see 'sbx ps -a'");
  return found;
}

static bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

void validate_name(const std::string& name) {
  if (!valid_name(name))
    throw Error(ErrorKind::InvalidArgument, "invalid sandbox name '" + name + "': use letters, digits, '_', '.', '-' (starting with a letter or digit)",
                EINVAL, kExitSbxFailed);
}

// RUN_ROOT/.names/.<name>.lock: flock(2)ed by a `sbx run --name` for as long
// as it runs (its state dir may not exist yet, so the dir test of claim_name
// cannot tell that the name is in use); the kernel drops it when sbx dies.
static std::string name_lock_path(const std::string& run_root, const std::string& name) {
  return run_root + "/.names/." + name + ".lock";
}

static bool name_lock_held(const std::string& run_root, const std::string& name) {
  int fd = ::open(name_lock_path(run_root, name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

ScopedName::ScopedName(std::string run_root, std::string name, std::string id)
    : run_root_(std::move(run_root)), name_(std::move(name)), id_(std::move(id)) {
  if (name_.empty()) return;
  validate_name(name_);
  fs::mkdir_p(run_root_ + "/.names", 0700);
  const std::string lock = name_lock_path(run_root_, name_);
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0) throw_errno("open " + lock);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) < 0) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw Error(ErrorKind::Conflict,
                "the name '" + name_ + "' is already used by a running sandbox; pick another name");
  }
  try {
    claim_name(run_root_, name_, id_);
  } catch (...) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw;
  }
}

ScopedName::~ScopedName() {
  if (name_.empty()) return;
  release_name(run_root_, name_, id_);
  if (lock_fd_ >= 0) {
    ::unlink(name_lock_path(run_root_, name_).c_str());
    ::close(lock_fd_);
  }
}

void claim_name(const std::string& run_root, const std::string& name, const std::string& id) {
  validate_name(name);
  std::string dir = run_root + "/.names";
  fs::mkdir_p(dir, 0700);
  std::string link = dir + "/" + name;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::symlink(id.c_str(), link.c_str()) == 0) return;
    if (errno != EEXIST) throw_errno("create name link " + link);
    char target[128];
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      if (fs::exists(sandbox_dir(run_root, target)) || name_lock_held(run_root, name))
        throw Error(ErrorKind::Conflict, "the name '" + name + "' is already used by sandbox " + std::string(target).substr(0, 12) +
                    "; remove it ('sbx rm -f " + name + "') or pick another name");
    }
    // Stale: its sandbox is gone. Remove and retry once (a racing claimer
    // either wins the symlink or sees ours).
    ::unlink(link.c_str());
  }
  throw Error("could not claim the name '" + name + "' (another sbx is creating a sandbox with it)");
}

void release_name(const std::string& run_root, const std::string& name, const std::string& id) {
  if (name.empty()) return;
  std::string link = run_root + "/.names/" + name;
  char target[128];
  ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return;
  target[n] = 0;
  if (id == target) ::unlink(link.c_str());
}

// Removes the entries of the directory `dfd` (closed on return).
static int remove_contents(int dfd, dev_t dev) noexcept {
  int first = 0;
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return errno;
  }
  while (struct dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) {
        // A mount point (it should not exist; never descend into another fs).
        char path[64];
        std::snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dfd, "");
        std::string p = std::string(path) + e->d_name;
        ::umount2(p.c_str(), MNT_DETACH);
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev) {
          if (!first) first = EBUSY;
          continue;
        }
      }
      int sub = ::openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        int r = remove_contents(sub, dev);
        if (r && !first) first = r;
      }
      if (::unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0 && !first) first = errno;
    } else if (::unlinkat(dfd, e->d_name, 0) < 0 && !first) {
      first = errno;
    }
  }
  ::closedir(d);
  return first;
}

int remove_tree(const std::string& path) noexcept {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    if (errno == ENOTDIR || errno == ELOOP) return ::unlink(path.c_str()) < 0 ? errno : 0;
    return errno;
  }
  struct stat st;
  if (::fstat(fd, &st) < 0) {
    int e = errno;
    ::close(fd);
    return e;
  }
  int r = remove_contents(fd, st.st_dev);
  if (::rmdir(path.c_str()) < 0 && !r) r = errno;
  return r;
}

}  // namespace sbx::runtime
