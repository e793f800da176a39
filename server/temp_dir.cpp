// Private temp dirs of `sbx serve` (server/temp_dir.h).
#include "server/temp_dir.h"

#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/state.h"

namespace sbx::server {

namespace {

std::string base_of(const std::string& root) { return root + "/.serve-tmp"; }

}  // namespace

TempDir::TempDir(const std::string& root) {
  std::string base = base_of(root);
  // Another request may remove the (empty) base between mkdir and mkdtemp: again.
  for (int i = 0;; ++i) {
    fs::mkdir_p(base, 0700);
    std::string tmpl = base + "/XXXXXX";
    if (::mkdtemp(tmpl.data())) {
      path_ = std::move(tmpl);
      break;
    }
    if (errno != ENOENT || i == 10) throw_errno("create a temp dir in " + base);
  }
  lock_ = Fd(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (lock_.fd < 0 || ::flock(lock_.fd, LOCK_SH) < 0) {
    int e = errno;
    runtime::remove_tree(path_);
    throw Error("lock the temp dir " + path_ + ": " + std::strerror(e), e);
  }
}

TempDir::~TempDir() {
  runtime::remove_tree(path_);
  lock_.reset();
  ::rmdir(path_.substr(0, path_.rfind('/')).c_str());  // the base, when no other request uses it
}

void sweep_stale_temp_dirs(const std::string& root) {
  std::string base = base_of(root);
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  time_t now = ::time(nullptr);
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string p = base + "/" + name;
    struct stat st {};
    // Young dirs are skipped: one made by another server an instant ago may
    // not carry its lock yet.
    if (::lstat(p.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) || now - st.st_mtime < 60) continue;
    Fd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.fd < 0 || ::flock(fd.fd, LOCK_EX | LOCK_NB) < 0) continue;  // in use by a live server
    if (int err = runtime::remove_tree(p))
      log::warn("serve: remove the stale temp dir " + p + ": " + std::strerror(err));
    else
      log::info("serve: removed the stale temp dir " + p + " (its server died)");
  }
  ::closedir(d);
  ::rmdir(base.c_str());
}

}  // namespace sbx::server
