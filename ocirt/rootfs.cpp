#include "ocirt/rootfs.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "common/error.h"
#include "common/openat2.h"
#include "runtime/linux/mounts.h"

namespace sbx::ocirt {

namespace {

enum class Create { None, Dir, File };

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  std::string proc() const { return "/proc/self/fd/" + std::to_string(fd); }
};

// Opens PATH inside the root (O_PATH), creating it (and its parents as dirs)
// when missing. Symlinks resolve inside the root.
int open_in_root(int rootfd, const std::string& path, Create create) {
  int fd = openat2_in_root(rootfd, path, O_PATH);
  if (fd >= 0 || errno != ENOENT || create == Create::None) {
    if (fd < 0) throw_errno("open " + path + " in the container's root");
    return fd;
  }
  auto slash = path.find_last_of('/');
  std::string parent = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  std::string base = path.substr(slash + 1);
  Fd p(open_in_root(rootfd, parent, Create::Dir));
  if (create == Create::Dir) {
    if (::mkdirat(p.fd, base.c_str(), 0755) < 0 && errno != EEXIST) throw_errno("mkdir " + path + " in the container's root");
  } else {
    int f = ::openat(p.fd, base.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f < 0 && errno != EEXIST) throw_errno("create " + path + " in the container's root");
    if (f >= 0) ::close(f);
  }
  fd = openat2_in_root(rootfd, path, O_PATH);
  if (fd < 0) throw_errno("open " + path + " in the container's root");
  return fd;
}

struct Options {
  unsigned long flags = 0;
  unsigned long clear = 0;  // flags asked off (rw, suid, …): a bind remount must not keep them
  unsigned long propagation = 0;
  bool bind = false, rbind = false;
  std::string data;
};

// runc's parseMountOptions: mount(8) flag words become flags, the rest data.
Options parse_options(const std::vector<std::string>& opts) {
  struct Flag {
    const char* name;
    bool clear;
    unsigned long flag;
  };
  static const Flag kFlags[] = {
      {"async", true, MS_SYNCHRONOUS}, {"atime", true, MS_NOATIME}, {"defaults", false, 0},
      {"dev", true, MS_NODEV}, {"diratime", true, MS_NODIRATIME}, {"dirsync", false, MS_DIRSYNC},
      {"exec", true, MS_NOEXEC}, {"mand", false, MS_MANDLOCK}, {"noatime", false, MS_NOATIME},
      {"nodev", false, MS_NODEV}, {"nodiratime", false, MS_NODIRATIME}, {"noexec", false, MS_NOEXEC},
      {"nomand", true, MS_MANDLOCK}, {"norelatime", true, MS_RELATIME}, {"nostrictatime", true, MS_STRICTATIME},
      {"nosuid", false, MS_NOSUID}, {"relatime", false, MS_RELATIME}, {"remount", false, MS_REMOUNT},
      {"ro", false, MS_RDONLY}, {"rw", true, MS_RDONLY}, {"strictatime", false, MS_STRICTATIME},
      {"suid", true, MS_NOSUID}, {"sync", false, MS_SYNCHRONOUS},
  };
  static const std::pair<const char*, unsigned long> kProp[] = {
      {"private", MS_PRIVATE}, {"rprivate", MS_PRIVATE | MS_REC}, {"shared", MS_SHARED},
      {"rshared", MS_SHARED | MS_REC}, {"slave", MS_SLAVE}, {"rslave", MS_SLAVE | MS_REC},
      {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC}};
  Options o;
  for (const auto& w : opts) {
    if (w == "bind") { o.bind = true; continue; }
    if (w == "rbind") { o.bind = o.rbind = true; continue; }
    bool known = false;
    for (const auto& f : kFlags)
      if (w == f.name) {
        known = true;
        if (f.clear) { o.flags &= ~f.flag; o.clear |= f.flag; }
        else o.flags |= f.flag;
      }
    for (const auto& p : kProp)
      if (w == p.first) { known = true; o.propagation |= p.second; }
    if (known) continue;
    if (w == "tmpcopyup" || w == "idmap" || w == "ridmap" || w == "copy-symlink")
      throw Error("option '" + w + "' is not supported by sbx-runc");
    o.data += (o.data.empty() ? "" : ",") + w;
  }
  return o;
}

// The flags a bind remount must keep: the kernel refuses (in a user namespace)
// to clear nosuid/nodev/noexec/atime flags that the source mount has locked.
unsigned long locked_flags(const std::string& path) {
  struct statvfs s{};
  if (::statvfs(path.c_str(), &s) < 0) return 0;
  unsigned long f = 0;
  if (s.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (s.f_flag & ST_NODEV) f |= MS_NODEV;
  if (s.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (s.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (s.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (s.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

void do_mount(const std::string& src, const std::string& target, const char* type, unsigned long flags,
              const std::string& data, const std::string& what) {
  if (::mount(src.c_str(), target.c_str(), type, flags, data.empty() ? nullptr : data.c_str()) < 0)
    throw_errno(what);
}

void bind_remount(const std::string& target, unsigned long flags, const std::string& what) {
  unsigned long keep = locked_flags(target);
  do_mount("", target, nullptr, MS_BIND | MS_REMOUNT | flags | keep, "", what + ": remount");
}

void cgroup_mount(int rootfd, const spec::Mount& m, const Options& o, const CgroupPaths& cg) {
  const std::string what = "mounts[" + m.destination + "]";
  {
    Fd t(open_in_root(rootfd, m.destination, Create::Dir));
    do_mount("tmpfs", t.proc(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755", what + ": mount tmpfs");
  }
  // Reopened: an fd taken before a mount still names what is under it.
  Fd top(openat2_in_root(rootfd, m.destination, O_PATH | O_DIRECTORY));
  if (top.fd < 0) throw_errno(what + ": open");
  for (const auto& dir : cg.dirs) {
    // /sys/fs/cgroup/<hierarchy>/<path...>: the hierarchy's name is the
    // component after /sys/fs/cgroup.
    std::string rest = dir.substr(std::string("/sys/fs/cgroup").size());
    while (!rest.empty() && rest[0] == '/') rest.erase(0, 1);
    std::string name = rest.substr(0, rest.find('/'));
    if (name.empty()) continue;
    if (::mkdirat(top.fd, name.c_str(), 0755) < 0 && errno != EEXIST) throw_errno(what + ": mkdir " + name);
    {
      Fd sub(::openat(top.fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.fd < 0) throw_errno(what + ": open " + name);
      do_mount(dir, sub.proc(), nullptr, MS_BIND, "", what + ": bind " + dir);
    }
    Fd sub(::openat(top.fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    bind_remount(sub.proc(), (o.flags & MS_RDONLY) | MS_NOSUID | MS_NODEV | MS_NOEXEC, what);
  }
  if (o.flags & MS_RDONLY)
    do_mount("", top.proc(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755", what + ": remount ro");
}

// The mount now on top of PATH: an fd taken before the mount still names
// what is under it.
int reopen(int rootfd, const std::string& path, const std::string& what) {
  int fd = openat2_in_root(rootfd, path, O_PATH);
  if (fd < 0) throw_errno(what + ": reopen after mount");
  return fd;
}

void mount_one(int rootfd, const spec::Mount& m, const CgroupPaths& cg) {
  const std::string what = "mounts[" + m.destination + "]";
  Options o;
  try {
    o = parse_options(m.options);
  } catch (const Error& e) {
    throw Error("config.json: " + what + ": " + e.what());
  }
  if (m.type == "cgroup" || m.type == "cgroup2") {
    if (!o.bind) return cgroup_mount(rootfd, m, o, cg);
  }
  if (m.type == "bind" || o.bind) {
    struct stat st{};
    if (::stat(m.source.c_str(), &st) < 0) throw_errno(what + ": bind source " + m.source);
    {
      Fd t(open_in_root(rootfd, m.destination, S_ISDIR(st.st_mode) ? Create::Dir : Create::File));
      do_mount(m.source, t.proc(), nullptr, MS_BIND | (o.rbind ? MS_REC : 0), "", what + ": bind " + m.source);
    }
    Fd t(reopen(rootfd, m.destination, what));
    unsigned long extra = o.flags & ~(MS_REMOUNT | MS_BIND | MS_REC);
    if (extra || o.clear) bind_remount(t.proc(), extra, what);
    if (o.propagation) do_mount("", t.proc(), nullptr, o.propagation, "", what + ": propagation");
    return;
  }
  {
    Fd t(open_in_root(rootfd, m.destination, Create::Dir));
    do_mount(m.source.empty() ? m.type : m.source, t.proc(), m.type.c_str(), o.flags & ~MS_REMOUNT, o.data,
             what + ": mount " + m.type);
  }
  if (!o.propagation) return;
  Fd t(reopen(rootfd, m.destination, what));
  if (o.propagation) do_mount("", t.proc(), nullptr, o.propagation, "", what + ": propagation");
}

void make_device(int rootfd, const spec::DeviceNode& d, bool in_userns) {
  const std::string what = "linux.devices[" + d.path + "]";
  auto slash = d.path.find_last_of('/');
  Fd dir(open_in_root(rootfd, d.path.substr(0, slash == 0 ? 1 : slash), Create::Dir));
  std::string base = d.path.substr(slash + 1);
  // A FIFO needs no privilege (mknod(2): only device nodes need CAP_MKNOD),
  // so it is made in a user namespace too.
  if (in_userns && d.type != 'p') {
    std::string host = d.host_path.empty() ? d.path : d.host_path;
    int f = ::openat(dir.fd, base.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f >= 0) ::close(f);
    Fd t(openat2_in_root(dir.fd, base, O_PATH));
    if (t.fd < 0) throw_errno(what + ": create");
    do_mount(host, t.proc(), nullptr, MS_BIND, "", what + ": bind " + host);
    return;
  }
  ::unlinkat(dir.fd, base.c_str(), 0);
  mode_t type = d.type == 'b' ? S_IFBLK : d.type == 'p' ? S_IFIFO : S_IFCHR;
  dev_t dev = d.type == 'p' ? 0 : makedev(static_cast<unsigned>(d.major), static_cast<unsigned>(d.minor));
  if (::mknodat(dir.fd, base.c_str(), type | (d.file_mode & 07777), dev) < 0)
    throw_errno(what + ": mknod");
  if (::fchownat(dir.fd, base.c_str(), d.uid, d.gid, AT_SYMLINK_NOFOLLOW) < 0) throw_errno(what + ": chown");
  // mknod applies the umask; the spec's fileMode is the mode.
  if (::fchmodat(dir.fd, base.c_str(), d.file_mode & 07777, 0) < 0) throw_errno(what + ": chmod");
}

// runtime-spec config-linux.md "Default Devices" (each unless config.json lists it).
std::vector<spec::DeviceNode> all_devices(const Config& c) {
  std::vector<spec::DeviceNode> out = c.devices;
  const spec::DeviceNode defaults[] = {
      {"/dev/null", 'c', 1, 3, 0666, 0, 0, ""},   {"/dev/zero", 'c', 1, 5, 0666, 0, 0, ""},
      {"/dev/full", 'c', 1, 7, 0666, 0, 0, ""},   {"/dev/random", 'c', 1, 8, 0666, 0, 0, ""},
      {"/dev/urandom", 'c', 1, 9, 0666, 0, 0, ""}, {"/dev/tty", 'c', 5, 0, 0666, 0, 0, ""}};
  for (const auto& d : defaults) {
    bool listed = false;
    for (const auto& x : c.devices) listed |= x.path == d.path;
    if (!listed) out.push_back(d);
  }
  return out;
}

}  // namespace

void prepare_rootfs(const Config& c, const CgroupPaths& cg, bool in_userns) {
  unsigned long prop = MS_SLAVE | MS_REC;
  if (!c.rootfs_propagation.empty()) {
    Options o = parse_options({c.rootfs_propagation});
    if (!o.propagation) throw Error("config.json: linux.rootfsPropagation: '" + c.rootfs_propagation + "' is not a propagation type");
    prop = o.propagation;
  }
  do_mount("", "/", nullptr, prop, "", "make / " + (c.rootfs_propagation.empty() ? std::string("rslave") : c.rootfs_propagation));
  struct stat st{};
  if (::stat(c.root_path.c_str(), &st) < 0)
    throw_errno_hint("config.json: root.path: stat " + c.root_path,
                     in_userns ? "in a user namespace the container's root must be able to reach it (search permission "
                                 "on every parent directory), as with runc"
                               : "check the bundle");
  if (!S_ISDIR(st.st_mode)) throw Error("config.json: root.path: " + c.root_path + " is not a directory", ENOTDIR);
  do_mount(c.root_path, c.root_path, nullptr, MS_BIND | MS_REC, "", "bind root.path " + c.root_path);
  Fd root(::open(c.root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) throw_errno("open root.path " + c.root_path);
  bool dev_mounted = false;
  for (const auto& m : c.mounts) {
    mount_one(root.fd, m, cg);
    dev_mounted |= m.destination == "/dev";
  }
  for (const auto& d : all_devices(c)) make_device(root.fd, d, in_userns);
  if (dev_mounted) {
    Fd dev(open_in_root(root.fd, "/dev", Create::None));
    const std::pair<const char*, const char*> links[] = {
        {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
        {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"}};
    for (const auto& [target, name] : links) {
      if (std::string(name) == "ptmx") ::unlinkat(dev.fd, name, 0);
      if (::symlinkat(target, dev.fd, name) < 0 && errno != EEXIST) throw_errno("symlink /dev/" + std::string(name));
    }
  }
}

void enter_rootfs(const Config& c, bool no_pivot) {
  if (!no_pivot) {
    runtime::pivot_into(c.root_path);
    return;
  }
  if (::chdir(c.root_path.c_str()) < 0) throw_errno("chdir " + c.root_path);
  do_mount(c.root_path, "/", nullptr, MS_MOVE, "", "move root.path onto / (--no-pivot)");
  if (::chroot(".") < 0) throw_errno("chroot " + c.root_path);
  if (::chdir("/") < 0) throw_errno("chdir /");
}

void finish_rootfs(const Config& c) {
  for (const auto& [key, value] : c.sysctl) {
    std::string path = "/proc/sys/" + key;
    for (size_t i = 10; i < path.size(); ++i)
      if (path[i] == '.') path[i] = '/';
    std::ofstream f(path);
    if (!(f << value) || !f.flush()) throw_errno("config.json: linux.sysctl[" + key + "]: write " + path);
  }
  // The native backend's own masking, with config.json's lists.
  try {
    runtime::mask_and_readonly_paths(c.masked_paths, c.readonly_paths);
  } catch (const Error& e) {
    throw Error(std::string("config.json: linux.maskedPaths/readonlyPaths: ") + e.what(), e.err());
  }
  if (c.root_readonly) bind_remount("/", MS_RDONLY, "root.readonly");
}

}  // namespace sbx::ocirt
