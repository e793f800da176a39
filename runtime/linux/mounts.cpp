#include "runtime/linux/mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "runtime/default_bounds.h"
#include "common/fs.h"
#include "common/openat2.h"

namespace sbx::runtime {

namespace {

void mnt(const char* src, const std::string& target, const char* type, unsigned long flags, const char* data,
         const std::string& what) {
  if (::mount(src, target.c_str(), type, flags, data) < 0) throw_errno("mount " + what + " on " + target);
}

/// Appends the file system context's log (fsopen(2) messages) to an error.
std::string fs_context_log(int fsfd) {
  std::string out;
  char buf[512];
  for (int i = 0; i < 8; ++i) {
    ssize_t n = ::read(fsfd, buf, sizeof buf - 1);
    if (n <= 0) break;
    buf[n] = 0;
    out += std::string(out.empty() ? " (" : "; ") + buf;
  }
  if (!out.empty()) out += ")";
  return out;
}

bool overlay_new_api(const std::vector<std::string>& lowers_top_first, const std::string& upper,
                     const std::string& work, const std::string& target, bool userxattr) {
  int fsfd = ::fsopen("overlay", FSOPEN_CLOEXEC);
  if (fsfd < 0) {
    if (errno == ENOSYS) return false;
    throw_errno("mount overlay on " + target + " (fsopen)");
  }
  auto fail = [&](const std::string& step) {
    int e = errno;
    std::string log = fs_context_log(fsfd);
    ::close(fsfd);
    throw Error("mount overlay on " + target + ": " + step + ": " + std::strerror(e) + " (" + errno_name(e) + ")" +
                    log,
                e);
  };
  for (size_t i = 0; i < lowers_top_first.size(); ++i) {
    if (::fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", lowers_top_first[i].c_str(), 0) < 0) {
      if (i == 0 && errno == EINVAL) {  // kernel < 6.8: no "lowerdir+"
        ::close(fsfd);
        return false;
      }
      fail("lower dir " + lowers_top_first[i]);
    }
  }
  // In a user namespace overlayfs cannot use trusted.overlay.*: whiteouts and
  // opaque dirs are read from user.overlay.* (oci/unpack writes both).
  if (userxattr && ::fsconfig(fsfd, FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) < 0) fail("userxattr");
  if (::fsconfig(fsfd, FSCONFIG_SET_STRING, "upperdir", upper.c_str(), 0) < 0) fail("upper dir " + upper);
  if (::fsconfig(fsfd, FSCONFIG_SET_STRING, "workdir", work.c_str(), 0) < 0) fail("work dir " + work);
  if (::fsconfig(fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) fail("create");
  int mfd = ::fsmount(fsfd, FSMOUNT_CLOEXEC, 0);
  if (mfd < 0) fail("fsmount");
  ::close(fsfd);
  if (::move_mount(mfd, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) {
    int e = errno;
    ::close(mfd);
    throw_errno("mount overlay on " + target + " (move_mount)", e);
  }
  ::close(mfd);
  return true;
}

void mkdir_in(const std::string& path, unsigned mode = 0755) {
  if (::mkdir(path.c_str(), mode) < 0 && errno != EEXIST) throw_errno("create directory " + path);
}

/// Creates the mount point `target` (a directory, or an empty file when the
/// source is a file), with its parents.
void make_target(const std::string& target, bool is_dir) {
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) return;
  auto slash = target.rfind('/');
  if (slash != std::string::npos && slash > 0) fs::mkdir_p(target.substr(0, slash));
  if (is_dir) {
    mkdir_in(target);
  } else {
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw_errno("create mount point " + target);
    ::close(fd);
  }
}

bool has_opt(const Mount& m, const char* opt) {
  for (const auto& o : m.options)
    if (o == opt) return true;
  return false;
}

/// mount(2) flags and data string from mount(8)-style options.
void parse_options(const std::vector<std::string>& opts, unsigned long& flags, std::string& data) {
  static const struct {
    const char* name;
    unsigned long set;
  } known[] = {{"ro", MS_RDONLY},         {"nosuid", MS_NOSUID},   {"nodev", MS_NODEV},
               {"noexec", MS_NOEXEC},     {"noatime", MS_NOATIME}, {"nodiratime", MS_NODIRATIME},
               {"relatime", MS_RELATIME}, {"strictatime", MS_STRICTATIME}, {"sync", MS_SYNCHRONOUS}};
  for (const auto& o : opts) {
    bool matched = o == "rw" || o == "bind" || o == "rbind" || o == "private" || o == "rprivate";
    for (const auto& k : known)
      if (o == k.name) {
        flags |= k.set;
        matched = true;
      }
    if (!matched) data += (data.empty() ? "" : ",") + o;
  }
}

void make_dev(const char* name, mode_t mode, unsigned maj, unsigned min) {
  std::string path = std::string("/dev/") + name;
  if (::mknod(path.c_str(), S_IFCHR | mode, makedev(maj, min)) < 0) throw_errno("create device " + path);
  // mknod honours the umask; set the mode exactly.
  ::chmod(path.c_str(), mode);
}

void symlink_in(const char* target, const char* path) {
  if (::symlink(target, path) < 0 && errno != EEXIST) throw_errno(std::string("create link ") + path);
}

// The rest of /dev once its device nodes are there, the same with or without
// a user namespace (OCI runtime-spec config-linux.md "Default Devices", "Dev
// symbolic links"; the mounts runc/podman give): a private devpts with /dev/ptmx, shm,
// mqueue, the /proc/self/fd links; then the umask back to 022.
void finish_dev() {
  mkdir_in("/dev/pts");
  mnt("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5", "devpts");
  symlink_in("pts/ptmx", "/dev/ptmx");
  mkdir_in("/dev/shm", 01777);
  mnt("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, ("mode=1777," + shm_tmpfs_options()).c_str(), "tmpfs");
  mkdir_in("/dev/mqueue");
  mnt("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "mqueue");
  symlink_in("/proc/self/fd", "/dev/fd");
  symlink_in("/proc/self/fd/0", "/dev/stdin");
  symlink_in("/proc/self/fd/1", "/dev/stdout");
  symlink_in("/proc/self/fd/2", "/dev/stderr");
  ::umask(022);
}

}  // namespace

const std::vector<std::string>& default_masked_paths() {
  static const std::vector<std::string> p = {"/proc/acpi",           "/proc/asound",      "/proc/interrupts",
                                             "/proc/kcore",          "/proc/keys",        "/proc/latency_stats",
                                             "/proc/timer_list",     "/proc/timer_stats", "/proc/sched_debug",
                                             "/proc/scsi",           "/sys/firmware",     "/sys/devices/virtual/powercap"};
  return p;
}

const std::vector<std::string>& default_readonly_paths() {
  static const std::vector<std::string> p = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  return p;
}

void make_mounts_private() {
  // MS_PRIVATE rather than runc's rslave: the sandbox needs nothing from the
  // host's later mounts, and private also stops any propagation into the host.
  mnt(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr, "private propagation");
}

uint64_t tmpfs_inodes_for(uint64_t bytes) { return std::max<uint64_t>(bytes / 4096, 4096); }

std::string tmpfs_size_option(uint64_t bytes) {
  return "size=" + std::to_string(bytes) + ",nr_inodes=" + std::to_string(tmpfs_inodes_for(bytes));
}

int mount_staging_at(int state_dir_fd, uint64_t disk_bytes) {
  int fsfd = ::fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fsfd < 0) throw_errno("mount the staging tmpfs (fsopen)");
  int mfd = -1;
  const std::string size = std::to_string(disk_bytes), inodes = std::to_string(tmpfs_inodes_for(disk_bytes));
  if (::fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", "0700", 0) == 0 &&
      (disk_bytes == 0 || (::fsconfig(fsfd, FSCONFIG_SET_STRING, "size", size.c_str(), 0) == 0 &&
                           ::fsconfig(fsfd, FSCONFIG_SET_STRING, "nr_inodes", inodes.c_str(), 0) == 0)) &&
      ::fsconfig(fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0)
    mfd = ::fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  int e = errno;
  std::string log = mfd < 0 ? fs_context_log(fsfd) : "";
  ::close(fsfd);
  if (mfd < 0) throw Error("mount the staging tmpfs: " + std::string(std::strerror(e)) + log, e);
  if (::move_mount(mfd, "", state_dir_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
    e = errno;
    ::close(mfd);
    throw_errno("mount the staging tmpfs on the state dir", e);
  }
  return mfd;
}

std::string mount_rootfs(const SandboxSpec& spec, const std::string& staging, const std::vector<int>& idmapped_layers,
                         bool staging_mounted) {
  if (spec.layer_dirs.empty()) throw Error("the image has no layers to mount");
  if (!staging_mounted) {
    // --disk: the upper dir lives on this tmpfs, so its size bounds the writes.
    std::string data = "mode=0700";
    if (spec.disk_bytes && spec.upper_dir.empty()) data += "," + tmpfs_size_option(spec.disk_bytes);
    mnt("sbx", staging, "tmpfs", MS_NOSUID | MS_NODEV, data.c_str(), "tmpfs");
  }
  std::vector<std::string> layer_paths = spec.layer_dirs;
  for (size_t i = 0; i < idmapped_layers.size() && i < layer_paths.size(); ++i) {
    std::string at = staging + "/lower" + std::to_string(i);
    mkdir_in(at, 0755);
    if (::move_mount(idmapped_layers[i], "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0)
      throw_errno("attach the idmapped layer " + spec.layer_dirs[i] + " on " + at);
    layer_paths[i] = at;
  }
  std::string upper, work;
  if (spec.upper_dir.empty()) {
    upper = staging + "/upper";
    work = staging + "/work";
    mkdir_in(upper);
    mkdir_in(work);
  } else {
    upper = spec.upper_dir + "/upper";
    work = spec.upper_dir + "/work";
    fs::mkdir_p(upper);
    fs::mkdir_p(work);
  }
  std::string root = staging + "/root";
  mkdir_in(root);
  std::vector<std::string> lowers(layer_paths.rbegin(), layer_paths.rend());  // top first
  if (!overlay_new_api(lowers, upper, work, root, staging_mounted)) {
    std::string data = "lowerdir=";
    for (size_t i = 0; i < lowers.size(); ++i) data += (i ? ":" : "") + lowers[i];
    data += ",upperdir=" + upper + ",workdir=" + work;
    if (staging_mounted) data += ",userxattr";
    if (data.size() >= 4096)
      throw Error("mount overlay on " + root + ": the image has too many layers for this kernel (" +
                  std::to_string(lowers.size()) + "); a kernel >= 6.8 has no such limit");
    mnt("overlay", root, "overlay", 0, data.c_str(), "overlay");
  }
  return root;
}

std::vector<BindSource> open_bind_sources(const SandboxSpec& spec) {
  std::vector<BindSource> out;
  for (const auto& m : spec.mounts) {
    if (m.type != "bind" && !has_opt(m, "bind") && !has_opt(m, "rbind")) continue;
    struct stat st {};
    if (::stat(m.source.c_str(), &st) < 0) throw_errno("volume source " + m.source);
    unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC;
    if (!has_opt(m, "bind") || has_opt(m, "rbind") || m.type == "bind") flags |= AT_RECURSIVE;
    int fd = ::open_tree(AT_FDCWD, m.source.c_str(), flags);
    if (fd < 0) throw_errno("bind mount " + m.source + " (open_tree)");
    out.push_back({&m, fd, S_ISDIR(st.st_mode)});
  }
  return out;
}

void pivot_into(const std::string& new_root) {
  if (::chdir(new_root.c_str()) < 0) throw_errno("chdir " + new_root);
  if (::syscall(SYS_pivot_root, ".", ".") < 0) throw_errno("pivot_root to " + new_root);
  // The old root is now mounted on top of the new one at "/": detach it.
  if (::umount2(".", MNT_DETACH) < 0) throw_errno("detach the old root");
  if (::chdir("/") < 0) throw_errno("chdir /");
}

void mount_system(const SandboxSpec& spec) {
  ::umask(0);
  mkdir_in("/proc", 0555);
  mnt("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "proc");
  mkdir_in("/sys", 0555);
  mnt("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, nullptr, "sysfs");
  mkdir_in("/dev", 0755);
  mnt("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, ("mode=755," + dev_tmpfs_options()).c_str(), "tmpfs");
  make_dev("null", 0666, 1, 3);
  make_dev("zero", 0666, 1, 5);
  make_dev("full", 0666, 1, 7);
  make_dev("random", 0666, 1, 8);
  make_dev("urandom", 0666, 1, 9);
  make_dev("tty", 0666, 5, 0);
  for (const auto& d : spec.devices) {
    std::string path = d.path;
    auto slash = path.rfind('/');
    if (slash > 5) fs::mkdir_p(path.substr(0, slash));
    if (::mknod(path.c_str(), (d.type == 'b' ? S_IFBLK : S_IFCHR) | d.file_mode,
                makedev(static_cast<unsigned>(d.major), static_cast<unsigned>(d.minor))) < 0)
      throw_errno("create device " + path);
    if (::chown(path.c_str(), d.uid, d.gid) < 0) throw_errno("chown " + path);
  }
  finish_dev();
}

void mount_user(const SandboxSpec& spec, std::vector<BindSource>& binds) {
  size_t bi = 0;
  for (const auto& m : spec.mounts) {
    if (bi < binds.size() && binds[bi].mount == &m) {
      BindSource& b = binds[bi++];
      make_target(m.destination, b.is_dir);
      if (has_opt(m, "ro") || has_opt(m, "nosuid") || has_opt(m, "nodev") || has_opt(m, "noexec")) {
        struct mount_attr attr {};
        if (has_opt(m, "ro")) attr.attr_set |= MOUNT_ATTR_RDONLY;
        if (has_opt(m, "nosuid")) attr.attr_set |= MOUNT_ATTR_NOSUID;
        if (has_opt(m, "nodev")) attr.attr_set |= MOUNT_ATTR_NODEV;
        if (has_opt(m, "noexec")) attr.attr_set |= MOUNT_ATTR_NOEXEC;
        if (::mount_setattr(b.tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
          throw_errno("make bind mount " + m.source + " read-only");
      }
      if (::move_mount(b.tree_fd, "", AT_FDCWD, m.destination.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0)
        throw_errno("bind mount " + m.source + " on " + m.destination);
      ::close(b.tree_fd);
      b.tree_fd = -1;
      continue;
    }
    make_target(m.destination, true);
    unsigned long flags = 0;
    std::string data;
    parse_options(m.options, flags, data);
    mnt(m.source.empty() ? m.type.c_str() : m.source.c_str(), m.destination, m.type.c_str(), flags,
        data.empty() ? nullptr : data.c_str(), m.type);
  }
}

void mask_and_readonly_paths() { mask_and_readonly_paths(default_masked_paths(), default_readonly_paths()); }

void mask_and_readonly_paths(const std::vector<std::string>& masked, const std::vector<std::string>& readonly) {
  // One empty tmpfs for every masked dir, bound on all but the first: each
  // superblock costs the host a shrinker, and the kernel keeps a slot for
  // every shrinker in every memory cgroup (mm/shrinker.c), so a superblock
  // per mask made every sandbox's kernel memory grow with the number alive.
  std::string first_masked_dir;
  for (const auto& p : masked) {
    struct stat st {};
    if (::stat(p.c_str(), &st) < 0) continue;  // not on this kernel
    if (!S_ISDIR(st.st_mode)) {
      mnt("/dev/null", p, nullptr, MS_BIND, nullptr, "mask");
      continue;
    }
    if (first_masked_dir.empty()) {
      mnt("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0", "mask tmpfs");
      first_masked_dir = p;
      continue;
    }
    mnt(first_masked_dir.c_str(), p, nullptr, MS_BIND, nullptr, "mask");
    struct mount_attr attr {};
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
    if (::mount_setattr(AT_FDCWD, p.c_str(), 0, &attr, sizeof attr) < 0) throw_errno("make the mask on " + p + " read-only");
  }
  for (const auto& p : readonly) {
    if (::mount(p.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0) {
      if (errno == ENOENT) continue;
      throw_errno("bind mount " + p + " read-only");
    }
    struct mount_attr attr {};
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
    if (::mount_setattr(AT_FDCWD, p.c_str(), AT_RECURSIVE, &attr, sizeof attr) < 0)
      throw_errno("make " + p + " read-only");
  }
}

namespace {
// A fresh file system of `type` mounted on `name` inside `rootfd`, never
// following a symlink in the image.
void mount_fresh_in(int rootfd, const char* name, const char* type, unsigned attrs, const std::string& root) {
  if (::mkdirat(rootfd, name, 0555) < 0 && errno != EEXIST) throw_errno("create " + root + "/" + name);
  int target = openat2_in_root(rootfd, name, O_PATH | O_DIRECTORY, /*no_symlinks=*/true);
  if (target < 0) throw_errno(std::string("mount ") + type + " on /" + name + " (the image's /" + name + " must be a directory)");
  int fsfd = ::fsopen(type, FSOPEN_CLOEXEC);
  if (fsfd < 0) {
    int e = errno;
    ::close(target);
    throw_errno(std::string("mount ") + type + " on /" + name + " (fsopen)", e);
  }
  int mfd = -1;
  if (::fsconfig(fsfd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == 0) mfd = ::fsmount(fsfd, FSMOUNT_CLOEXEC, attrs);
  int e = errno;
  std::string log = mfd < 0 ? fs_context_log(fsfd) : "";
  ::close(fsfd);
  if (mfd < 0 || ::move_mount(mfd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
    if (mfd >= 0) e = errno;
    if (mfd >= 0) ::close(mfd);
    ::close(target);
    throw Error(std::string("mount ") + type + " on /" + name + ": " + std::strerror(e) + log, e);
  }
  ::close(mfd);
  ::close(target);
}
}  // namespace

UsernsSystem prepare_system_in_userns(const SandboxSpec& spec, const std::string& root) {
  int rootfd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) throw_errno("open " + root);
  try {
    mount_fresh_in(rootfd, "proc", "proc", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, root);
    mount_fresh_in(rootfd, "sys", "sysfs", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY, root);
  } catch (...) {
    ::close(rootfd);
    throw;
  }
  ::close(rootfd);
  UsernsSystem u;
  auto add = [&u](const std::string& host, const std::string& in_sandbox) {
    int fd = ::open_tree(AT_FDCWD, host.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0) throw_errno("bind the host's " + host + " (open_tree)");
    u.devices.emplace_back(in_sandbox, fd);
  };
  for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"}) add(std::string("/dev/") + d, std::string("/dev/") + d);
  for (const auto& d : spec.devices) add(d.host_path.empty() ? d.path : d.host_path, d.path);
  return u;
}

void mount_system_in_userns(const SandboxSpec& spec, UsernsSystem& u) {
  (void)spec;
  ::umask(0);
  mkdir_in("/dev", 0755);
  mnt("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, ("mode=755," + dev_tmpfs_options()).c_str(), "tmpfs");
  for (auto& [path, fd] : u.devices) {
    auto slash = path.rfind('/');
    if (slash > 5) fs::mkdir_p(path.substr(0, slash));
    int f = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (f < 0) throw_errno("create the mount point " + path);
    ::close(f);
    if (::move_mount(fd, "", AT_FDCWD, path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) < 0) throw_errno("bind the host's " + path);
    ::close(fd);
    fd = -1;
  }
  finish_dev();
}

void finish_rootfs(const SandboxSpec& spec) {
  if (!spec.readonly_rootfs) return;
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(AT_FDCWD, "/", 0, &attr, sizeof attr) < 0) throw_errno("make / read-only");
}

}  // namespace sbx::runtime
