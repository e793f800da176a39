#include "runtime/linux/userns.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"

namespace sbx::runtime {

namespace {

// "sbx:START:COUNT" from a subordinate-id file; false when there is none.
bool sbx_entry(const std::string& path, IdPool& out) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("sbx:", 0) != 0) continue;
    size_t c = line.find(':', 4);
    if (c == std::string::npos) continue;
    uint64_t start = 0, count = 0;
    auto r1 = std::from_chars(line.data() + 4, line.data() + c, start);
    auto r2 = std::from_chars(line.data() + c + 1, line.data() + line.size(), count);
    if (r1.ec != std::errc() || r2.ec != std::errc() || start + count > (uint64_t{1} << 32))
      throw Error(path + ": malformed entry '" + line + "'; expected sbx:START:COUNT");
    out = {static_cast<uint32_t>(start), static_cast<uint32_t>(count)};
    return true;
  }
  return false;
}

bool is_sandbox_id(const char* name) {
  if (std::strlen(name) != 64) return false;
  for (const char* p = name; *p; ++p)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

void write_map(pid_t pid, const char* which, const std::vector<IdMapping>& maps) {
  std::string text;
  for (const auto& m : maps)
    text += std::to_string(m.container_id) + " " + std::to_string(m.host_id) + " " + std::to_string(m.size) + "\n";
  std::string path = "/proc/" + std::to_string(pid) + "/" + which;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open " + path);
  // One write(2): the kernel accepts a map only whole.
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) throw_errno("write " + path + " (\"" + text + "\")", n < 0 ? e : EIO);
}

}  // namespace

IdPool id_pool(const std::string& subuid, const std::string& subgid) {
  IdPool u, g;
  bool hu = sbx_entry(subuid, u), hg = sbx_entry(subgid, g);
  if (!hu && !hg) return {1u << 31, (1u << 31) - kIdRangeSize};
  if (hu != hg || u.start != g.start || u.count != g.count)
    throw Error("the 'sbx' entries of " + subuid + " and " + subgid +
                " differ; give both the same START:COUNT (or remove both to use ids from 2^31)");
  if (u.count < kIdRangeSize)
    throw Error(subuid + ": the 'sbx' entry holds " + std::to_string(u.count) + " ids; a sandbox needs " +
                std::to_string(kIdRangeSize));
  return u;
}

namespace {

// RUN_ROOT/.userns-<slot>: a symlink to the id of the sandbox that holds the
// slot. symlink(2) fails with EEXIST when the slot is taken, so a start takes
// a range with one system call and never looks at the other sandboxes.
std::string slot_link(const std::string& run_root, int slot) {
  return run_root + "/.userns-" + std::to_string(slot);
}

// Holds the run root's flock (no extra file in it): taking over a dead
// owner's slot and releasing one are read-then-unlink, which must not race.
struct RunRootLock {
  int fd;
  explicit RunRootLock(const std::string& run_root) {
    fd = ::open(run_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw_errno("open the run root " + run_root);
    while (::flock(fd, LOCK_EX) < 0)
      if (errno != EINTR) {
        int e = errno;
        ::close(fd);
        throw_errno("lock the run root " + run_root, e);
      }
  }
  ~RunRootLock() { ::close(fd); }  // closing drops the flock
  RunRootLock(const RunRootLock&) = delete;
  RunRootLock& operator=(const RunRootLock&) = delete;
};

// The id a slot link names; empty when there is none (or it is not an id).
std::string slot_owner(const std::string& link) {
  char target[80];
  ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  target[n] = 0;
  return is_sandbox_id(target) ? std::string(target) : std::string();
}

// Whether the sandbox `owner` still holds its slot: its state dir is there
// (a range lives as long as the state dir, as before the index existed).
bool owner_holds(const std::string& run_root, const std::string& owner) {
  struct stat sb {};
  return !owner.empty() && ::lstat((run_root + "/" + owner).c_str(), &sb) == 0;
}

// Takes `slot` for `id` (under the run root's lock): true when the link is
// ours now, taking it over from an owner whose state dir is gone.
bool take_slot(const std::string& run_root, const std::string& id, int slot) {
  const std::string link = slot_link(run_root, slot);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::symlink(id.c_str(), link.c_str()) == 0) return true;
    if (errno != EEXIST) throw_errno("record the user-namespace range in " + link);
    std::string owner = slot_owner(link);
    if (owner == id) return true;
    if (owner_holds(run_root, owner)) return false;
    // Its sandbox is gone (a killed create or rm, a crash): free it.
    ::unlink(link.c_str());
  }
  return false;
}

uint32_t random_u32() {
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = static_cast<uint32_t>(::getpid()) * 2654435761u;
  return r;
}

}  // namespace

IdRange allocate_id_range(const std::string& run_root, const std::string& sandbox_id, const IdPool& pool,
                          int prefer_slot) {
  int slots = static_cast<int>(pool.count / kIdRangeSize);
  RunRootLock lock(run_root);
  const std::string file = run_root + "/" + sandbox_id + "/userns";
  auto record = [&](int slot) -> IdRange {
    // The state dir's own copy: `sbx create` of a restarted sandbox reads its
    // old slot there, and rm/gc find the slot to release.
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int e = errno;
    std::string text = std::to_string(slot) + "\n";
    ssize_t n = fd < 0 ? -1 : ::write(fd, text.data(), text.size());
    if (fd >= 0) e = errno, ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
      if (fd >= 0) ::unlink(file.c_str());
      ::unlink(slot_link(run_root, slot).c_str());
      throw_errno((fd < 0 ? "record the user-namespace range in " : "write ") + file, n < 0 ? e : EIO);
    }
    return {pool.start + static_cast<uint32_t>(slot) * kIdRangeSize, slot, file, slot_link(run_root, slot)};
  };
  if (prefer_slot >= 0 && prefer_slot < slots && take_slot(run_root, sandbox_id, prefer_slot)) return record(prefer_slot);
  // From a random slot on: with N of S slots taken a start tries S/(S-N) on
  // average, the same at 10 or 10,000 live sandboxes; all of them only when
  // the pool is full.
  const int first = slots > 0 ? static_cast<int>(random_u32() % static_cast<uint32_t>(slots)) : 0;
  for (int n = 0; n < slots; ++n) {
    int slot = (first + n) % slots;
    if (take_slot(run_root, sandbox_id, slot)) return record(slot);
  }
  throw Error("all " + std::to_string(slots) + " user-namespace ranges of " + std::to_string(kIdRangeSize) +
                  " ids are in use (sandboxes in " + run_root + "); run 'sbx gc', or pass --userns host",
              EBUSY);
}

void release_id_range(const IdRange& r) noexcept {
  if (!r.file.empty()) ::unlink(r.file.c_str());
  if (r.link.empty()) return;
  auto slash = r.link.rfind('/');
  auto id_slash = r.file.rfind('/');
  if (slash == std::string::npos || id_slash == std::string::npos) return;
  std::string run_root = r.link.substr(0, slash);
  std::string dir = r.file.substr(0, id_slash);
  std::string id = dir.substr(dir.rfind('/') + 1);
  try {
    RunRootLock lock(run_root);
    if (slot_owner(r.link) == id) ::unlink(r.link.c_str());
  } catch (const Error&) {
  }
}

void release_id_slot(const std::string& run_root, const std::string& id, const std::string& dir) noexcept {
  int fd = ::open((dir + "/userns").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[16] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  int slot = -1;
  if (n <= 0 || std::from_chars(buf, buf + n, slot).ec != std::errc() || slot < 0) return;
  try {
    RunRootLock lock(run_root);
    const std::string link = slot_link(run_root, slot);
    if (slot_owner(link) == id) ::unlink(link.c_str());
  } catch (const Error&) {
  }
}

bool release_stale_id_slot(const std::string& run_root, const std::string& name) noexcept {
  if (name.rfind(".userns-", 0) != 0) return false;
  try {
    RunRootLock lock(run_root);
    const std::string link = run_root + "/" + name;
    struct stat sb {};
    if (::lstat(link.c_str(), &sb) < 0) return false;
    if (owner_holds(run_root, slot_owner(link))) return false;
    return ::unlink(link.c_str()) == 0;
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> gc_id_slots(const std::string& run_root, bool repair) noexcept {
  std::vector<std::string> out;
  try {
    RunRootLock lock(run_root);
    DIR* d = ::opendir(run_root.c_str());
    if (!d) return out;
    std::vector<std::pair<std::string, int>> recorded;  // (id, slot) of state dirs that have a range
    while (struct dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, ".userns-", 8) == 0) {
        std::string link = run_root + "/" + e->d_name;
        if (!owner_holds(run_root, slot_owner(link)) && ::unlink(link.c_str()) == 0) out.push_back(link);
      } else if (repair && is_sandbox_id(e->d_name)) {
        int fd = ::openat(::dirfd(d), (std::string(e->d_name) + "/userns").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        char buf[16] = {};
        ssize_t n = ::read(fd, buf, sizeof buf - 1);
        ::close(fd);
        int slot = -1;
        if (n > 0 && std::from_chars(buf, buf + n, slot).ec == std::errc() && slot >= 0)
          recorded.emplace_back(e->d_name, slot);
      }
    }
    ::closedir(d);
    // A range recorded by an sbx from before the index: put it in the index,
    // so that no new sandbox gets the same ids.
    for (const auto& [id, slot] : recorded) (void)!::symlink(id.c_str(), slot_link(run_root, slot).c_str());
  } catch (const Error&) {
  }
  return out;
}

std::vector<IdMapping> id_maps(const IdRange& r) { return {{0, r.host_start, kIdRangeSize}}; }

uint32_t host_root_id(const std::vector<IdMapping>& maps) {
  for (const auto& m : maps)
    if (m.container_id == 0 && m.size > 0) return m.host_id;
  throw Error("the sandbox's id map does not map id 0 (its root) to a host id");
}

void prepare_upper_for_userns(const std::string& upper_dir, uint32_t uid, uint32_t gid) {
  fs::mkdir_p(upper_dir, 0700);
  for (const auto& [sub, mode] : {std::pair<const char*, mode_t>{"upper", 0755}, {"work", 0700}}) {
    std::string p = upper_dir + "/" + sub;
    if (::mkdir(p.c_str(), mode) < 0 && errno != EEXIST) throw_errno("create " + p);
    if (::lchown(p.c_str(), uid, gid) < 0) throw_errno("chown " + p + " to the sandbox's root (" + std::to_string(uid) + ")");
  }
  int fd = ::open(upper_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno("open " + upper_dir);
  // Through the fd: the dir itself, never a symlink planted in its place.
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::chown(self.c_str(), uid, gid) < 0 || ::chmod(self.c_str(), 0700) < 0) {
    int e = errno;
    ::close(fd);
    throw_errno("chown " + upper_dir + " to the sandbox's root (" + std::to_string(uid) + ")", e);
  }
  ::close(fd);
}

void write_id_maps(pid_t pid, const std::vector<IdMapping>& uids, const std::vector<IdMapping>& gids) {
  write_map(pid, "uid_map", uids);
  write_map(pid, "gid_map", gids);
}

void idmap_tree(int tree_fd, int userns_fd, bool recursive, bool read_only, const std::string& what) {
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP | (read_only ? MOUNT_ATTR_RDONLY : 0);
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (::syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
    throw_errno_hint("idmap the mount of " + what + " (mount_setattr MOUNT_ATTR_IDMAP)",
                     "its file system may not support idmapped mounts; use --userns host");
}

int volume_idmap_userns(uint32_t root_host, uint32_t owner_uid, uint32_t owner_gid) {
  auto outside = [root_host](uint32_t id) { return id == 0 || (id >= root_host && id - root_host < kIdRangeSize); };
  if (outside(owner_uid) && outside(owner_gid)) return -1;
  // map: on-disk id (inside the idmap's namespace) -> the sandbox's kernel id.
  auto map_for = [root_host, &outside](uint32_t owner) -> std::vector<IdMapping> {
    if (outside(owner)) return {{root_host, root_host, kIdRangeSize}};
    // A named volume (owned by kVolumeIdBase): every sandbox id N is on-disk
    // id kVolumeIdBase+N, as host_ids_volume_userns has it, so that sandboxes
    // of any id range (and gVisor's) agree on the owners of its files.
    if (owner == kVolumeIdBase) return {{kVolumeIdBase, root_host, kIdRangeSize - 1}};
    return {{owner, root_host, 1}, {root_host + 1, root_host + 1, kIdRangeSize - 1}};
  };
  return idmap_userns(map_for(owner_uid), map_for(owner_gid));
}

int idmap_userns(const std::vector<IdMapping>& uids, const std::vector<IdMapping>& gids) {
  // A process that only holds the namespace until we have an fd of it. It
  // says its pid as /proc sees it (readlink /proc/self): the caller may be a
  // sandbox's init, in a pid namespace of its own, with the host's /proc.
  int go[2], said[2];
  if (::pipe2(go, O_CLOEXEC) < 0) throw_errno("pipe for the volume's user namespace");
  if (::pipe2(said, O_CLOEXEC) < 0) {
    int e = errno;
    ::close(go[0]);
    ::close(go[1]);
    throw_errno("pipe for the volume's user namespace", e);
  }
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid == 0) {
    ::close(go[1]);
    ::close(said[0]);
    char self[32] = {};
    ssize_t n = ::readlink("/proc/self", self, sizeof self - 1);
    if (n > 0) (void)!::write(said[1], self, static_cast<size_t>(n));
    ::close(said[1]);
    char c;
    (void)!::read(go[0], &c, 1);
    ::_exit(0);
  }
  int e = errno;
  ::close(go[0]);
  ::close(said[1]);
  if (pid < 0) {
    ::close(go[1]);
    ::close(said[0]);
    throw_errno("create the user namespace for a volume's id map", e);
  }
  int fd = -1;
  try {
    char buf[32] = {};
    ssize_t n;
    while ((n = ::read(said[0], buf, sizeof buf - 1)) < 0 && errno == EINTR) {
    }
    int seen = 0;
    if (n <= 0 || std::from_chars(buf, buf + n, seen).ec != std::errc() || seen <= 0)
      throw Error("the user namespace for a volume's id map: its process did not say its pid");
    write_id_maps(seen, uids, gids);
    std::string ns = "/proc/" + std::to_string(seen) + "/ns/user";
    fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open " + ns);
  } catch (...) {
    ::close(said[0]);
    ::close(go[1]);
    ::waitpid(pid, nullptr, 0);
    throw;
  }
  ::close(said[0]);
  ::close(go[1]);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return fd;
}

int host_ids_volume_userns(uint32_t owner_uid, uint32_t owner_gid) {
  auto map_for = [](uint32_t owner) -> std::vector<IdMapping> {
    uint32_t root = owner != 0 && owner < kVolumeIdBase ? owner : kVolumeIdBase;
    return {{root, 0, 1}, {kVolumeIdBase + 1, 1, 65535}};
  };
  return idmap_userns(map_for(owner_uid), map_for(owner_gid));
}

int open_idmapped_tree(const std::string& path, int userns_fd, bool recursive, bool read_only) {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  int fd = static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, path.c_str(), flags));
  if (fd < 0) throw_errno("open_tree " + path);
  try {
    idmap_tree(fd, userns_fd, recursive, read_only, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
}

}  // namespace sbx::runtime

namespace sbx::runtime {

void shift_ids(const std::string& dir, uint32_t from, uint32_t to) {
  if (from == to) return;
  auto shift = [&](uint32_t id) -> uint32_t { return id >= from && id - from < kIdRangeSize ? id - from + to : id; };
  std::error_code ec;
  auto one = [&](const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) < 0) throw_errno("stat " + p.string());
    uid_t u = shift(st.st_uid);
    gid_t g = shift(st.st_gid);
    if (u == st.st_uid && g == st.st_gid) return;
    if (::lchown(p.c_str(), u, g) < 0) throw_errno("change the owner of " + p.string());
    // chown clears set-user/group-id bits of a regular file: put them back.
    if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) && ::chmod(p.c_str(), st.st_mode & 07777) < 0)
      throw_errno("restore the mode of " + p.string());
  };
  one(dir);
  std::filesystem::recursive_directory_iterator it(dir, std::filesystem::directory_options::none, ec), end;
  if (ec) throw Error("walk " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error("walk " + dir + ": " + ec.message());
    one(it->path());
  }
}

}  // namespace sbx::runtime
