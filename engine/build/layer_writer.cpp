#include "engine/build/layer_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "oci/tree.h"
#include "runtime/user.h"

namespace sbx::build {

namespace {

std::string parent_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == 0 || s == std::string::npos ? "/" : p.substr(0, s);
}

/// security.capability and user.* xattrs of `from` onto the open file `to`
/// (what image layers carry: file capabilities such as ping's).
void copy_xattrs(const std::string& from, int to) {
  char names[4096];
  ssize_t n = ::llistxattr(from.c_str(), names, sizeof names);
  if (n <= 0) return;
  for (ssize_t i = 0; i < n;) {
    std::string name(names + i);
    i += static_cast<ssize_t>(name.size()) + 1;
    if (name != "security.capability" && name.rfind("user.", 0) != 0) continue;
    if (name.rfind("user.overlay.", 0) == 0) continue;
    char value[1024];
    ssize_t vn = ::lgetxattr(from.c_str(), name.c_str(), value, sizeof value);
    if (vn < 0) continue;
    if (::fsetxattr(to, name.c_str(), value, static_cast<size_t>(vn), 0) < 0 && errno != ENOTSUP)
      throw_errno("set the xattr " + name + " copied from " + from);
  }
}

void copy_data(int in, int out, const std::string& what) {
  for (;;) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("copy " + what);
    if (n == 0) return;
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read " + what);
    if (n == 0) return;
    fs::write_all(out, std::string_view(buf, static_cast<size_t>(n)), what);
  }
}

}  // namespace

LayerWriter::LayerWriter(std::string staging, std::vector<std::string> image_layers)
    : staging_(std::move(staging)), view_([&] {
        std::vector<std::string> l{staging_};
        l.insert(l.end(), image_layers.begin(), image_layers.end());
        return RootfsView(std::move(l));
      }()) {}

void LayerWriter::clear(const std::string& path) {
  struct stat st;
  if (::lstat(host(path).c_str(), &st) < 0) return;
  if (S_ISDIR(st.st_mode))
    oci::remove_tree(host(path));
  else if (::unlink(host(path).c_str()) < 0)
    throw_errno("remove " + host(path));
}

void LayerWriter::ensure_dir(const std::string& dir, uid_t uid, gid_t gid) {
  std::string cur;
  std::string p = rooted(dir);
  size_t i = 1;
  while (i <= p.size() && p != "/") {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    cur += "/" + p.substr(i, j - i);
    i = j + 1;
    struct stat st;
    if (::lstat(host(cur).c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      ::unlink(host(cur).c_str());  // written by this step; a directory replaces it
    }
    auto below = view_.lookup(cur);  // (the staging dir has nothing here now)
    if (below && S_ISDIR(below->st.st_mode)) {
      // Copy-up: the directory as the image has it.
      if (::mkdir(host(cur).c_str(), 0700) < 0) throw_errno("create " + host(cur));
      if (::lchown(host(cur).c_str(), below->st.st_uid, below->st.st_gid) < 0) throw_errno("chown " + host(cur));
      if (::chmod(host(cur).c_str(), below->st.st_mode & 07777) < 0) throw_errno("chmod " + host(cur));
      copied_up_.push_back({cur, below->st.st_mtim});
    } else {
      // New (or replacing a non-directory of the image, which it hides).
      if (::mkdir(host(cur).c_str(), 0700) < 0) throw_errno("create " + host(cur));
      if (::lchown(host(cur).c_str(), uid, gid) < 0) throw_errno("chown " + host(cur));
      if (::chmod(host(cur).c_str(), 0755) < 0) throw_errno("chmod " + host(cur));
    }
  }
}

void LayerWriter::copy(const SourceTree& tree, const SourceTree::Match& m, const std::string& dest,
                       const CopyAttrs& a) {
  tree.walk(m, [&](const std::string& rel, const RootfsView::Entry& e) {
    copy_entry(tree, rel, e, rel.empty() ? dest : (dest == "/" ? "/" : dest + "/") + rel, a, rel.empty());
  });
}

void LayerWriter::copy_entry(const SourceTree& tree, const std::string& rel, const RootfsView::Entry& e,
                             const std::string& dest, const CopyAttrs& a, bool is_root) {
  (void)tree;
  (void)rel;
  const struct stat& st = e.st;
  const uid_t uid = a.uid ? *a.uid : (a.keep_owner ? st.st_uid : 0);
  const gid_t gid = a.gid ? *a.gid : (a.keep_owner ? st.st_gid : 0);
  const mode_t mode = a.chmod ? *a.chmod : (st.st_mode & 07777);
  const uid_t new_uid = a.uid ? *a.uid : 0;
  const gid_t new_gid = a.gid ? *a.gid : 0;
  if (S_ISDIR(st.st_mode)) {
    if (is_root) {
      // A source directory: its content goes into dest, which keeps what
      // the image has (or is made new).
      ensure_dir(dest, new_uid, new_gid);
      return;
    }
    ensure_dir(parent_of(dest), new_uid, new_gid);
    struct stat cur;
    bool exists = ::lstat(host(dest).c_str(), &cur) == 0;
    if (exists && !S_ISDIR(cur.st_mode)) {
      clear(dest);
      exists = false;
    }
    if (!exists && ::mkdir(host(dest).c_str(), 0700) < 0) throw_errno("create " + host(dest));
    if (::lchown(host(dest).c_str(), uid, gid) < 0) throw_errno("chown " + host(dest));
    if (::chmod(host(dest).c_str(), mode) < 0) throw_errno("chmod " + host(dest));
    copied_up_.push_back({dest, st.st_mtim});
    return;
  }
  if (dest == "/") throw Error("cannot copy a file onto '/'");
  ensure_dir(parent_of(dest), new_uid, new_gid);
  clear(dest);
  const std::string to = host(dest);
  timespec times[2] = {st.st_mtim, st.st_mtim};
  if (S_ISREG(st.st_mode)) {
    Fd in(::open(e.host_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (in.fd < 0) throw_errno("read " + e.host_path);
    Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (out.fd < 0) throw_errno("create " + to);
    copy_data(in.fd, out.fd, e.host_path + " to " + to);
    if (::fchown(out.fd, uid, gid) < 0) throw_errno("chown " + to);
    if (::fchmod(out.fd, mode) < 0) throw_errno("chmod " + to);  // after chown, which clears set-id bits
    copy_xattrs(e.host_path, out.fd);
    if (::futimens(out.fd, times) < 0) throw_errno("set the times of " + to);
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlink(e.host_path.c_str(), target.data(), target.size());
    if (n < 0) throw_errno("read the symlink " + e.host_path);
    target.resize(static_cast<size_t>(n));
    if (::symlink(target.c_str(), to.c_str()) < 0) throw_errno("create the symlink " + to);
  } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    if (::mknod(to.c_str(), (st.st_mode & S_IFMT) | 0600, st.st_rdev) < 0) throw_errno("create " + to);
    if (::chmod(to.c_str(), mode) < 0) throw_errno("chmod " + to);
  } else {
    return;  // sockets are not content
  }
  if (::lchown(to.c_str(), uid, gid) < 0) throw_errno("chown " + to);
  if (::utimensat(AT_FDCWD, to.c_str(), times, AT_SYMLINK_NOFOLLOW) < 0) throw_errno("set the times of " + to);
}

void LayerWriter::write_file(const std::string& dest, const std::string& content, const CopyAttrs& a,
                             std::optional<mode_t> mode, time_t mtime) {
  if (dest == "/") throw Error("cannot write a file onto '/'");
  const uid_t uid = a.uid.value_or(0);
  const gid_t gid = a.gid.value_or(0);
  ensure_dir(parent_of(dest), uid, gid);
  clear(dest);
  const std::string to = host(dest);
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.fd < 0) throw_errno("create " + to);
  fs::write_all(out.fd, content, to);
  if (::fchown(out.fd, uid, gid) < 0) throw_errno("chown " + to);
  if (::fchmod(out.fd, a.chmod ? *a.chmod : mode.value_or(0644)) < 0) throw_errno("chmod " + to);
  if (mtime) {
    timespec t[2] = {{mtime, 0}, {mtime, 0}};
    if (::futimens(out.fd, t) < 0) throw_errno("set the times of " + to);
  }
}

void LayerWriter::finish() {
  for (auto it = copied_up_.rbegin(); it != copied_up_.rend(); ++it) {
    timespec t[2] = {it->mtime, it->mtime};
    struct stat st;
    if (::lstat(host(it->path).c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
    if (::utimensat(AT_FDCWD, host(it->path).c_str(), t, AT_SYMLINK_NOFOLLOW) < 0)
      throw_errno("set the times of " + host(it->path));
  }
  copied_up_.clear();
}

bool LayerWriter::empty() const {
  DIR* d = ::opendir(staging_.c_str());
  if (!d) throw_errno("read " + staging_);
  bool none = true;
  while (dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") {
      none = false;
      break;
    }
  }
  ::closedir(d);
  return none;
}

mode_t parse_chmod(const std::string& text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string::npos)
    throw Error(ErrorKind::InvalidArgument,
                "invalid --chmod=" + text + ": give the mode in octal, e.g. --chmod=755 or --chmod=0644");
  return static_cast<mode_t>(std::strtoul(text.c_str(), nullptr, 8));
}

namespace {

/// The file `path` of the image (through its symlinks), or "" when absent.
std::string read_image_file(const RootfsView& v, const std::string& path) {
  auto r = v.resolve(path, true);
  if (!r.entry || !S_ISREG(r.entry->st.st_mode)) return "";
  Fd f(::open(r.entry->host_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) return "";
  std::string out;
  fs::read_fd(f.fd, path, [&](std::string_view s) {
    if (out.size() < (4u << 20)) out.append(s);
  });
  return out;
}

/// Field 2 (the id) of the line of /etc/passwd or /etc/group whose first field is `name`.
std::optional<uint32_t> id_of(const std::string& file, const std::string& name) {
  std::istringstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string x; std::getline(ls, x, ':');) f.push_back(x);
    if (f.size() >= 3 && f[0] == name) {
      try {
        return runtime::parse_id(f[2], "id");
      } catch (const Error&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

bool numeric(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

std::pair<uid_t, gid_t> resolve_chown(const std::string& text, const RootfsView& image) {
  size_t colon = text.find(':');
  std::string user = text.substr(0, colon), group = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (user.empty()) throw Error(ErrorKind::InvalidArgument, "invalid --chown=" + text + ": give USER[:GROUP]");
  uid_t uid;
  if (numeric(user)) {
    uid = runtime::parse_id(user, "--chown user id");
  } else {
    auto id = id_of(read_image_file(image, "/etc/passwd"), user);
    if (!id) throw Error("--chown=" + text + ": unable to find user " + user + " in the image's /etc/passwd");
    uid = *id;
  }
  if (group.empty()) return {uid, uid};
  if (numeric(group)) return {uid, runtime::parse_id(group, "--chown group id")};
  auto gid = id_of(read_image_file(image, "/etc/group"), group);
  if (!gid) throw Error("--chown=" + text + ": unable to find group " + group + " in the image's /etc/group");
  return {uid, *gid};
}

}  // namespace sbx::build
