#include "runtime/native/init_binary.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "common/error.h"
#include "common/fs.h"

// cmake/embed_init.cmake (the generated sbx_init_blob.c).
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
