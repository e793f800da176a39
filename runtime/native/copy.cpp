#include "runtime/native/copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <random>
#include <utility>

#include "common/error.h"
#include "common/fd.h"
#include "common/openat2.h"

namespace sbx::runtime {

namespace {

struct Ctx {
  bool into_sandbox;
  uint32_t uid, gid;
  uid_t reader_uid = 0;  // copy out: the sandbox root's host uid (SandboxSide)
  std::string what;  // for messages: "sandbox abc:/x"
  CopyResult result;
  int depth = 0;
  uint64_t max_bytes = 0;  // most data bytes in all (0: no bound)
};

void split(const std::string& path, std::string& dir, std::string& base) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  if (slash == std::string::npos) {
    dir = ".";
    base = p;
  } else {
    dir = slash == 0 ? "/" : p.substr(0, slash);
    base = p.substr(slash + 1);
  }
}

// Counts `n` more data bytes against c.max_bytes.
void count_bytes(uint64_t n, const std::string& name, Ctx& c) {
  if (c.max_bytes && c.result.bytes + n > c.max_bytes)
    throw Error("copy " + name + ": more than " + std::to_string(c.max_bytes) +
                    " bytes of file data; stopped (the copy's bound)",
                EFBIG);
  c.result.bytes += n;
}

// Copies bytes [off, end) of `in` to the same offsets of `out`.
void copy_range(int in, int out, off_t off, off_t end, const std::string& name, Ctx& c) {
  bool splice = true;
  while (off < end) {
    size_t want = static_cast<size_t>(std::min<off_t>(end - off, off_t{1} << 30));
    if (c.max_bytes) want = static_cast<size_t>(std::min<uint64_t>(want, c.max_bytes - c.result.bytes + 1));
    if (splice) {
      loff_t ioff = off, ooff = off;
      ssize_t n = ::copy_file_range(in, &ioff, out, &ooff, want, 0);
      if (n > 0) {
        count_bytes(static_cast<uint64_t>(n), name, c);
        off += n;
        continue;
      }
      if (n == 0) return;  // the file shrank under the copy
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) throw_errno("copy " + name);
      splice = false;  // fall back to pread/pwrite
    }
    char buf[65536];
    ssize_t n = ::pread(in, buf, std::min(want, sizeof buf), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read " + name);
    if (n == 0) return;
    count_bytes(static_cast<uint64_t>(n), name, c);
    for (ssize_t w = 0; w < n;) {
      ssize_t k = ::pwrite(out, buf + w, static_cast<size_t>(n - w), off + w);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) throw_errno("write " + name);
      w += k;
    }
    off += n;
  }
}

// Copies the regular file `in` to the empty file `out`, its data extents
// only (lseek(2) SEEK_DATA/SEEK_HOLE): a hole stays a hole, so a sparse file
// of 1 TiB costs the blocks it has, not 1 TiB. The size is the one `in` had
// when the copy began.
void copy_data(int in, int out, const std::string& name, Ctx& c) {
  struct stat st;
  if (::fstat(in, &st) < 0) throw_errno("stat " + name);
  const off_t size = st.st_size;
  for (off_t pos = 0; pos < size;) {
    off_t data = ::lseek(in, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // a hole up to the end
    off_t hole = data < 0 ? -1 : ::lseek(in, data, SEEK_HOLE);
    if (data < 0 || hole < 0) {  // no SEEK_DATA here: all of it is data
      data = pos;
      hole = size;
    }
    if (data >= size) break;
    hole = std::min(hole, size);
    copy_range(in, out, data, hole, name, c);
    pos = hole;
  }
  if (::ftruncate(out, size) < 0) throw_errno("write " + name);  // a hole at the end
}

std::string temp_name(const char* name) {
  static std::mt19937_64 rng{std::random_device{}()};
  return std::string(".sbx-cp-") + std::to_string(rng() % 100000000) + "-" + std::string(name).substr(0, 100);
}

mode_t dest_mode(const struct stat& st, const Ctx& c) {
  // A set-id file from a sandbox must not become a set-id file on the host.
  return c.into_sandbox ? st.st_mode & 07777 : host_mode_from_sandbox(st.st_mode);
}

void finish_entry(int dst_dirfd, const char* name, int fd, const struct stat& st, Ctx& c) {
  if (c.into_sandbox && ::fchownat(dst_dirfd, name, c.uid, c.gid, AT_SYMLINK_NOFOLLOW) < 0)
    throw_errno(std::string("chown ") + name + " in " + c.what);
  if (fd >= 0) {
    if (::fchmod(fd, dest_mode(st, c)) < 0) throw_errno(std::string("chmod ") + name);
    struct timespec ts[2] = {st.st_atim, st.st_mtim};
    ::futimens(fd, ts);
  } else {
    struct timespec ts[2] = {st.st_atim, st.st_mtim};
    ::utimensat(dst_dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
  }
}

/// New files in a user-namespace sandbox: its overlay gives a new inode the
/// creator's fsuid/fsgid, and host root's has no id in the sandbox's
/// namespace (EOVERFLOW). So entries are created as the sandbox's root
/// (c.uid/c.gid, its host ids) for the one call, keeping sbx's capabilities
/// (a change of fsuid away from 0 drops them; capabilities(7)).
class CreateAs {
 public:
  explicit CreateAs(const Ctx& c) : on_(c.into_sandbox && (c.uid != 0 || c.gid != 0)) {
    if (!on_) return;
    hdr_.version = _LINUX_CAPABILITY_VERSION_3;
    ::syscall(SYS_capget, &hdr_, caps_);
    old_gid_ = static_cast<gid_t>(::setfsgid(c.gid));
    old_uid_ = static_cast<uid_t>(::setfsuid(c.uid));
    ::syscall(SYS_capset, &hdr_, caps_);
  }
  ~CreateAs() {
    if (!on_) return;
    int e = errno;
    ::setfsuid(old_uid_);
    ::setfsgid(old_gid_);
    ::syscall(SYS_capset, &hdr_, caps_);
    errno = e;
  }
  CreateAs(const CreateAs&) = delete;
  CreateAs& operator=(const CreateAs&) = delete;

 private:
  bool on_;
  uid_t old_uid_ = 0;
  gid_t old_gid_ = 0;
  struct __user_cap_header_struct hdr_ {};
  struct __user_cap_data_struct caps_[2] {};
};

/// While sbx reads the sandbox's side of a copy out, it acts as the
/// sandbox's root would toward the sandbox's processes, never as host root:
/// the sandbox's /proc (reached through its root) serves /proc/PID/environ,
/// mem, maps, fd/ … after a ptrace access check (ptrace_may_access; proc(5)),
/// which host root passes for the sandbox's init (that the sandbox itself
/// cannot read: a planted /work/pdir -> /proc/1 handed its environment, the
/// creating user's, to `sbx cp`). Host root owns the sandbox's user namespace,
/// so it holds every capability in it whatever its effective set
/// (user_namespaces(7)); hence the effective uid becomes the sandbox root's
/// host uid (`reader_uid`, 0 with --userns host) and the effective
/// capabilities only CAP_DAC_READ_SEARCH (read any file the sandbox shows),
/// without CAP_SYS_PTRACE. The saved uid stays 0, so both come back after.
class SandboxSide {
 public:
  SandboxSide(bool on, uid_t reader_uid) : on_(on), uid_(reader_uid) {
    if (!on_) return;
    hdr_.version = _LINUX_CAPABILITY_VERSION_3;
    if (::syscall(SYS_capget, &hdr_, saved_) < 0) throw_errno("sbx cp: read sbx's capabilities");
    // The raw syscall changes this thread's euid only (as capset does): in a
    // threaded caller (sbx serve) glibc's setresuid would change every
    // thread's, under the feet of concurrent requests.
    if (uid_ != 0 && ::syscall(SYS_setresuid, -1, uid_, -1) < 0)
      throw_errno("sbx cp: act as the sandbox's root (uid " + std::to_string(uid_) + ")");
    struct __user_cap_data_struct less[2] {};
    for (int i = 0; i < 2; ++i) less[i].permitted = saved_[i].permitted;
    less[CAP_TO_INDEX(CAP_DAC_READ_SEARCH)].effective = CAP_TO_MASK(CAP_DAC_READ_SEARCH);
    if (::syscall(SYS_capset, &hdr_, less) < 0) {
      int e = errno;
      restore();
      throw_errno("sbx cp: drop capabilities to read the sandbox", e);
    }
  }
  ~SandboxSide() {
    if (!on_) return;
    int e = errno;
    restore();
    errno = e;
  }
  SandboxSide(const SandboxSide&) = delete;
  SandboxSide& operator=(const SandboxSide&) = delete;

 private:
  void restore() noexcept {
    if (uid_ != 0) (void)!::syscall(SYS_setresuid, -1, 0, -1);
    ::syscall(SYS_capset, &hdr_, saved_);
  }
  bool on_;
  uid_t uid_;
  struct __user_cap_header_struct hdr_ {};
  struct __user_cap_data_struct saved_[2] {};
};

/// The effective uid of the sandbox's init (its root: the start of its id
/// range, or 0 with --userns host), from /proc/PID/status. Throws sbx::Error.
uid_t sandbox_root_uid(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/status";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) throw_errno("sbx cp: open " + path);
  char buf[4096];
  ssize_t n = ::read(fd.fd, buf, sizeof buf - 1);
  if (n <= 0) throw_errno("sbx cp: read " + path);
  buf[n] = 0;
  const char* u = std::strstr(buf, "\nUid:");
  unsigned long real = 0, eff = 0;
  if (!u || std::sscanf(u + 5, "%lu %lu", &real, &eff) != 2) throw Error("sbx cp: no Uid line in " + path);
  return static_cast<uid_t>(eff);
}

int rename_in(int dirfd, const std::string& from, const char* to, const Ctx& c) {
  CreateAs as(c);  // a rename creates a name: the vfs wants the fsuid mapped too
  return ::renameat(dirfd, from.c_str(), dirfd, to);
}

int create_file(int dirfd, const std::string& name, const Ctx& c) {
  CreateAs as(c);
  return ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

// Copies the entry `name` of `src_dirfd` to `dst_name` in `dst_dirfd`, never
// following a symlink on either side.
void copy_entry(int src_dirfd, const char* name, int dst_dirfd, const char* dst_name, Ctx& c) {
  if (++c.depth > 256) throw Error("directory tree too deep at " + std::string(name));
  const bool src_sandbox = !c.into_sandbox;  // the source side is the sandbox's: read it as its root
  struct stat st;
  {
    SandboxSide as(src_sandbox, c.reader_uid);
    if (::fstatat(src_dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) throw_errno(std::string("stat ") + name);
  }
  if (S_ISREG(st.st_mode)) {
    Fd in;
    {
      SandboxSide as(src_sandbox, c.reader_uid);
      in = Fd(::openat(src_dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (in.fd < 0) throw_errno(std::string("open ") + name);
    }
    struct stat st2;
    if (::fstat(in.fd, &st2) < 0 || !S_ISREG(st2.st_mode)) throw Error(std::string(name) + " changed while copying it");
    // Write a temp file and rename it over the target: a symlink or anything
    // else at the destination is replaced, never written through.
    std::string tmp = temp_name(dst_name);
    Fd out(create_file(dst_dirfd, tmp, c));
    if (out.fd < 0) throw_errno(std::string("create ") + dst_name + " in " + (c.into_sandbox ? c.what : "the host"));
    try {
      copy_data(in.fd, out.fd, name, c);
      finish_entry(dst_dirfd, tmp.c_str(), out.fd, st2, c);
      struct stat old;
      if (::fstatat(dst_dirfd, dst_name, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(old.st_mode))
        throw Error(std::string("cannot overwrite directory ") + dst_name + " with a file");
      if (rename_in(dst_dirfd, tmp, dst_name, c) < 0) throw_errno(std::string("rename to ") + dst_name);
    } catch (...) {
      ::unlinkat(dst_dirfd, tmp.c_str(), 0);
      throw;
    }
    ++c.result.files;
  } else if (S_ISDIR(st.st_mode)) {
    int made;
    {
      CreateAs as(c);
      made = ::mkdirat(dst_dirfd, dst_name, 0700);
    }
    if (made < 0) {
      struct stat old;
      if (errno != EEXIST || ::fstatat(dst_dirfd, dst_name, &old, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(old.st_mode))
        throw Error(std::string("cannot create directory ") + dst_name + ": " +
                    (errno == EEXIST ? "a file or symlink is in the way" : std::strerror(errno)));
    }
    Fd dst(::openat(dst_dirfd, dst_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dst.fd < 0) throw_errno(std::string("open directory ") + dst_name);
    int sfd;
    {
      SandboxSide as(src_sandbox, c.reader_uid);
      sfd = ::openat(src_dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sfd < 0) throw_errno(std::string("open directory ") + name);
    }
    DIR* d = ::fdopendir(sfd);
    if (!d) {
      ::close(sfd);
      throw_errno(std::string("read directory ") + name);
    }
    try {
      for (;;) {
        struct dirent* e;
        {
          SandboxSide as(src_sandbox, c.reader_uid);  // (proc checks access while listing)
          e = ::readdir(d);
        }
        if (!e) break;
        if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
        copy_entry(sfd, e->d_name, dst.fd, e->d_name, c);
      }
    } catch (...) {
      ::closedir(d);
      throw;
    }
    ::closedir(d);
    finish_entry(dst_dirfd, dst_name, dst.fd, st, c);
  } else if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n;
    {
      SandboxSide as(src_sandbox, c.reader_uid);
      n = ::readlinkat(src_dirfd, name, target, sizeof target - 1);
      if (n < 0) throw_errno(std::string("readlink ") + name);
    }
    target[n] = 0;
    std::string tmp = temp_name(dst_name);
    int made;
    {
      CreateAs as(c);
      made = ::symlinkat(target, dst_dirfd, tmp.c_str());
    }
    if (made < 0) throw_errno(std::string("create symlink ") + dst_name);
    finish_entry(dst_dirfd, tmp.c_str(), -1, st, c);
    if (rename_in(dst_dirfd, tmp, dst_name, c) < 0) {
      int e = errno;
      ::unlinkat(dst_dirfd, tmp.c_str(), 0);
      throw_errno(std::string("rename to ") + dst_name, e);
    }
    ++c.result.files;
  }
  // Devices, fifos, sockets: skipped (as `docker cp` of a device is useless here).
  --c.depth;
}

Fd open_root(const SandboxState& st) {
  std::string sid = st.id.substr(0, 12);
  if (st.runtime != "native") throw Error(ErrorKind::Unsupported,
              "sbx cp: sandbox " + sid + " uses runtime '" + st.runtime + "', not supported yet");
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, st.pid, 0));
  if (pidfd < 0 || process_start_time(st.pid) != st.pid_start) {
    if (pidfd >= 0) ::close(pidfd);
    throw Error(ErrorKind::Conflict, "sandbox " + sid + " is not running; 'sbx cp' needs a running sandbox");
  }
  Fd root(::open(("/proc/" + std::to_string(st.pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  int e = errno;
  // Still the same process after opening its root?
  bool same = process_start_time(st.pid) == st.pid_start;
  ::close(pidfd);
  if (root.fd < 0 || !same) throw_errno("open the root of sandbox " + sid, same ? e : ESRCH);
  return root;
}

}  // namespace

CopyResult copy_from_sandbox(const SandboxState& st, const std::string& sandbox_path, const std::string& host_path,
                             uint64_t max_bytes) {
  Fd root = open_root(st);  // (/proc/PID/root itself needs the ptrace access: opened first)
  Ctx c{false, 0, 0, sandbox_root_uid(st.pid), "sandbox " + st.id.substr(0, 12), {}, 0, max_bytes};
  std::string sdir, sbase;
  split(sandbox_path, sdir, sbase);
  Fd src_dir;
  {
    SandboxSide as(true, c.reader_uid);
    src_dir = Fd(openat2_in_root(root.fd, sdir, O_RDONLY | O_DIRECTORY));
    if (src_dir.fd < 0) throw_errno("open " + sdir + " in " + c.what);
    if (sbase.empty()) sbase = ".";
    struct stat sst;
    if (::fstatat(src_dir.fd, sbase.c_str(), &sst, AT_SYMLINK_NOFOLLOW) < 0)
      throw_errno("copy " + sandbox_path + " from " + c.what);
  }

  std::string ddir, dbase;
  struct stat dst;
  if (::stat(host_path.c_str(), &dst) == 0 && S_ISDIR(dst.st_mode)) {
    ddir = host_path;
    dbase = sbase == "." ? "rootfs" : sbase;
  } else {
    split(host_path, ddir, dbase);
  }
  Fd dst_dir(::open(ddir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dst_dir.fd < 0) throw_errno("open the host directory " + ddir);
  struct stat before;
  const bool existed = ::fstatat(dst_dir.fd, dbase.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0;
  try {
    copy_entry(src_dir.fd, sbase.c_str(), dst_dir.fd, dbase.c_str(), c);
  } catch (const Error& e) {
    // Past the bound: what was copied goes (an entry that was there before stays).
    if (e.err() == EFBIG && !existed) {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::path("/proc/self/fd/" + std::to_string(dst_dir.fd)) / dbase, ec);
    }
    throw;
  }
  return c.result;
}

PathStat stat_in_sandbox(const SandboxState& st, const std::string& sandbox_path) {
  Fd root = open_root(st);
  std::string sdir, sbase;
  split(sandbox_path, sdir, sbase);
  if (sbase.empty()) sbase = ".";
  SandboxSide as(true, sandbox_root_uid(st.pid));
  Fd dir(openat2_in_root(root.fd, sdir, O_RDONLY | O_DIRECTORY));
  const std::string what = "sandbox " + st.id.substr(0, 12);
  if (dir.fd < 0) throw_errno("open " + sdir + " in " + what);
  struct stat s;
  if (::fstatat(dir.fd, sbase.c_str(), &s, AT_SYMLINK_NOFOLLOW) < 0) throw_errno("stat " + sandbox_path + " in " + what);
  PathStat out;
  out.mode = s.st_mode;
  out.size = static_cast<uint64_t>(s.st_size);
  out.mtime_s = s.st_mtime;
  if (S_ISLNK(s.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlinkat(dir.fd, sbase.c_str(), buf, sizeof buf);
    if (n > 0) out.link_target.assign(buf, static_cast<size_t>(n));
  }
  return out;
}

CopyResult copy_into_sandbox(const SandboxState& st, const std::string& host_path, const std::string& sandbox_path,
                             uint32_t owner_uid, uint32_t owner_gid) {
  Fd root = open_root(st);  // (/proc/PID/root itself needs the ptrace access: opened first)
  Ctx c{true, owner_uid, owner_gid, 0, "sandbox " + st.id.substr(0, 12), {}, 0, 0};
  std::string hdir, hbase;
  split(host_path, hdir, hbase);
  Fd src_dir(::open(hdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (src_dir.fd < 0) throw_errno("open the host directory " + hdir);
  struct stat hst;
  if (::fstatat(src_dir.fd, hbase.c_str(), &hst, AT_SYMLINK_NOFOLLOW) < 0) throw_errno("copy " + host_path);

  // An existing directory (symlinks resolved inside the sandbox): copy into it.
  std::string dbase;
  Fd dst_dir(openat2_in_root(root.fd, sandbox_path, O_RDONLY | O_DIRECTORY));
  if (dst_dir.fd >= 0) {
    dbase = hbase;
  } else {
    std::string ddir;
    split(sandbox_path, ddir, dbase);
    dst_dir = Fd(openat2_in_root(root.fd, ddir, O_RDONLY | O_DIRECTORY));
    if (dst_dir.fd < 0) throw_errno("open " + ddir + " in " + c.what);
  }
  if (dbase.empty() || dbase == "." || dbase == "..") throw Error(ErrorKind::InvalidArgument,
              "sbx cp: invalid destination " + sandbox_path);
  copy_entry(src_dir.fd, hbase.c_str(), dst_dir.fd, dbase.c_str(), c);
  return c.result;
}

}  // namespace sbx::runtime
