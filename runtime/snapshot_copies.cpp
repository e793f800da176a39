#include "runtime/snapshot_copies.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

namespace sbx::runtime {

void remove_snapshot_copies(const std::string& dir) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void remove_sandbox_snapshot_copies(const std::string& run_root, const std::string& id) noexcept {
  if (id.empty() || id.find('/') != std::string::npos || id[0] == '.') return;
  const std::string base = run_root + "/" + kSnapshotCopiesDir;
  remove_snapshot_copies(base + "/" + id);
  ::rmdir(base.c_str());  // only when empty: other sandboxes' copies stay
}

std::vector<std::string> gc_snapshot_copies(const std::string& run_root, int min_age_s) noexcept {
  std::vector<std::string> removed;
  const std::string base = run_root + "/" + kSnapshotCopiesDir;
  DIR* d = ::opendir(base.c_str());
  if (!d) return removed;
  const time_t now = ::time(nullptr);
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string dir = base + "/" + e->d_name;
    struct stat st {};
    if (::stat((run_root + "/" + e->d_name).c_str(), &st) == 0) continue;  // sandbox still there
    if (::stat(dir.c_str(), &st) != 0 || now - st.st_mtime < min_age_s) continue;
    remove_snapshot_copies(dir);
    removed.push_back(dir);
  }
  ::closedir(d);
  return removed;
}

}  // namespace sbx::runtime
