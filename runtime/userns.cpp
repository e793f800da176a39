#include "runtime/userns.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
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

std::string dir_of(const std::string& run_root) { return run_root + "/userns"; }

bool state_dir_exists(const std::string& run_root, const std::string& id) {
  struct stat st {};
  return id.size() == 64 && ::stat((run_root + "/" + id).c_str(), &st) == 0;
}

std::string owner_of(const std::string& file) {
  try {
    std::string s = fs::read_file(file);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  } catch (const Error&) {
    return {};
  }
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

IdRange allocate_id_range(const std::string& run_root, const std::string& sandbox_id, const IdPool& pool) {
  std::string dir = dir_of(run_root);
  if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) fs::mkdir_p(dir, 0700);
  fs::FileLock lock(dir + "/.lock");
  int slots = static_cast<int>(pool.count / kIdRangeSize);
  for (int slot = 0; slot < slots; ++slot) {
    std::string file = dir + "/" + std::to_string(slot);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
      // Taken, unless its sandbox is gone (a crashed sbx): then reclaim it.
      std::string owner = owner_of(file);
      if (owner.empty() || state_dir_exists(run_root, owner)) continue;
      if (::unlink(file.c_str()) < 0) continue;
      fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) throw_errno("create the user-namespace range file " + file);
    std::string text = sandbox_id + "\n";
    ssize_t n = ::write(fd, text.data(), text.size());
    int e = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
      ::unlink(file.c_str());
      throw_errno("write " + file, n < 0 ? e : EIO);
    }
    return {pool.start + static_cast<uint32_t>(slot) * kIdRangeSize, slot};
  }
  throw Error("all " + std::to_string(slots) + " user-namespace ranges of " + std::to_string(kIdRangeSize) +
                  " ids are in use (" + dir + "); run 'sbx gc', or pass --userns host",
              EBUSY);
}

void release_id_range(const std::string& run_root, const IdRange& r) noexcept {
  if (r.slot < 0) return;
  ::unlink((dir_of(run_root) + "/" + std::to_string(r.slot)).c_str());
}

std::vector<std::string> gc_id_ranges(const std::string& run_root) noexcept {
  std::vector<std::string> removed;
  std::string dir = dir_of(run_root);
  try {
    fs::FileLock lock(dir + "/.lock");
    DIR* d = ::opendir(dir.c_str());
    if (!d) return removed;
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string file = dir + "/" + e->d_name;
      std::string owner = owner_of(file);
      if (!owner.empty() && state_dir_exists(run_root, owner)) continue;
      if (::unlink(file.c_str()) == 0) removed.push_back(file);
    }
    ::closedir(d);
  } catch (const Error&) {
  }
  return removed;
}

std::vector<IdMapping> id_maps(const IdRange& r) { return {{0, r.host_start, kIdRangeSize}}; }

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
