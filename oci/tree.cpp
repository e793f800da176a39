#include "oci/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/error.h"

namespace sbx::oci {

void remove_tree_at(int dirfd, const std::string& name, const std::string& what) {
  if (::unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR && errno != EPERM) throw_errno("remove " + what);
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw_errno("open " + what + " to remove it");
  }
  DIR* d = ::fdopendir(fd);
  if (!d) {
    int e = errno;
    ::close(fd);
    throw_errno("read directory " + what, e);
  }
  std::vector<std::string> names;
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  try {
    for (const auto& n : names) remove_tree_at(::dirfd(d), n, what + "/" + n);
  } catch (...) {
    ::closedir(d);
    throw;
  }
  ::closedir(d);
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) < 0 && errno != ENOENT) throw_errno("remove directory " + what);
}

void remove_tree(const std::string& path) { remove_tree_at(AT_FDCWD, path, path); }

}  // namespace sbx::oci
