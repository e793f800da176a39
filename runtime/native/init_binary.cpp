#include "runtime/native/init_binary.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/fs.h"

// cmake/embed_binary.cmake (the generated sbx_init_blob.c).
extern "C" {
extern const char sbx_init_image[];
extern const char sbx_init_image_end[];
extern const char sbx_init_image_sha256[];
}

namespace sbx::runtime {

namespace {

bool is_ours(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 07777) == 0111 &&
         static_cast<uint64_t>(st.st_size) == static_cast<uint64_t>(sbx_init_image_end - sbx_init_image);
}

int open_path(const std::string& path) {
  return ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

}  // namespace

const char* init_binary_sha256() noexcept { return sbx_init_image_sha256; }

int open_init_binary(const std::string& run_root) {
  const std::string dir = run_root + "/.init";
  const std::string path = dir + "/sbx-init-" + sbx_init_image_sha256;
  int fd = open_path(path);
  if (fd >= 0 && is_ours(fd)) return fd;
  if (fd >= 0) ::close(fd);
  // Missing or not what we wrote: write it anew under a temporary name.
  if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) fs::mkdir_p(dir, 0700);
  std::string tmp = dir + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(&tmp));
  int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
  if (w < 0) throw_errno("write the sandbox init program " + tmp);
  try {
    fs::write_all(w, std::string_view(sbx_init_image, static_cast<size_t>(sbx_init_image_end - sbx_init_image)), tmp);
    if (::fchmod(w, 0111) < 0) throw_errno("chmod " + tmp);
    if (::fsync(w) < 0) throw_errno("fsync " + tmp);
  } catch (...) {
    ::close(w);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(w);
  // Published with link(2), which never replaces: a start that opened the
  // file a moment ago may be about to attach it in its sandbox, and a mount
  // of a file unlinked meanwhile fails (ENOENT). So a concurrent writer's
  // copy (the same bytes) wins; only a file that is not ours is replaced.
  if (::link(tmp.c_str(), path.c_str()) < 0) {
    int e = errno;
    if (e == EEXIST) {
      int cur = open_path(path);
      if (cur >= 0 && is_ours(cur)) {
        ::unlink(tmp.c_str());
        return cur;
      }
      if (cur >= 0) ::close(cur);
      e = ::rename(tmp.c_str(), path.c_str()) < 0 ? errno : 0;
    }
    if (e) {
      ::unlink(tmp.c_str());
      throw_errno("publish " + tmp + " as " + path, e);
    }
  } else {
    ::unlink(tmp.c_str());
  }
  fd = open_path(path);
  if (fd < 0) throw_errno("open the sandbox init program " + path);
  if (!is_ours(fd)) {
    ::close(fd);
    throw Error("the sandbox init program " + path + " is not the one sbx just wrote; remove it and retry");
  }
  return fd;
}

std::vector<std::string> gc_init_binaries(const std::string& run_root) noexcept {
  std::vector<std::string> removed;
  const std::string dir = run_root + "/.init";
  const std::string current = std::string("sbx-init-") + sbx_init_image_sha256;
  // The candidates, by file identity (a holder's /proc/PID/exe is a mount of
  // the same inode, in its own mount namespace: the path differs, dev:ino not).
  std::set<std::pair<dev_t, ino_t>> candidates;
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> files;
  DIR* idir = ::opendir(dir.c_str());
  if (!idir) return removed;  // no .init dir: nothing to do
  while (struct dirent* e = ::readdir(idir)) {
    std::string name = e->d_name;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) < 0 || !S_ISREG(st.st_mode)) continue;
    if (name.rfind(".tmp-", 0) == 0) {
      if (st.st_mtime < ::time(nullptr) - 60 && ::unlink(path.c_str()) == 0) removed.push_back(path);
      continue;
    }
    if (name.rfind("sbx-init-", 0) != 0 || name == current) continue;
    files.emplace_back(path, std::make_pair(st.st_dev, st.st_ino));
    candidates.insert({st.st_dev, st.st_ino});
  }
  ::closedir(idir);
  if (candidates.empty()) return removed;
  std::set<std::pair<dev_t, ino_t>> in_use;
  DIR* d = ::opendir("/proc");
  if (!d) return removed;  // cannot tell what runs: remove nothing
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    struct stat st {};
    if (::stat((std::string("/proc/") + e->d_name + "/exe").c_str(), &st) == 0 &&
        candidates.count({st.st_dev, st.st_ino}))
      in_use.insert({st.st_dev, st.st_ino});
  }
  ::closedir(d);
  for (const auto& [path, key] : files)
    if (!in_use.count(key) && ::unlink(path.c_str()) == 0) removed.push_back(path);
  return removed;
}

int open_init_mount(const std::string& run_root) {
  int fd = open_init_binary(run_root);
  int tree = ::open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  int e = errno;
  ::close(fd);
  if (tree < 0) throw_errno("open the sandbox init program in " + run_root + "/.init (open_tree)", e);
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  // A run root on a noexec mount (a hardened /run) must not stop the holder:
  // this mount of the one file is the clone's own, so it may allow exec.
  attr.attr_clr = MOUNT_ATTR_NOEXEC;
  if (::mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    e = errno;
    ::close(tree);
    throw_errno("make the mount of the sandbox init program read-only (mount_setattr)", e);
  }
  return tree;
}

void attach_init_mount(int tree_fd) {
  int fd = ::open(kInitMountPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) throw_errno(std::string("create the mount point ") + kInitMountPath);
  ::close(fd);
  if (::move_mount(tree_fd, "", AT_FDCWD, kInitMountPath, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    throw_errno(std::string("mount the sandbox init program on ") + kInitMountPath + " (move_mount)");
}

}  // namespace sbx::runtime
