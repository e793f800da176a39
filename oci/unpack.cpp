#include "oci/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/openat2.h"
#include "oci/digest.h"
#include "oci/tree.h"

namespace sbx::oci {
namespace {

constexpr size_t kMaxPath = 4096;
constexpr size_t kMaxXattrValue = 64 * 1024;
constexpr size_t kBufSize = 256 * 1024;

// Decompressed layer stream: reader "raw" undoes gzip/zstd (or nothing) over the
// blob file; its output is hashed (diff id) and fed to the tar reader.
struct Stream {
  int fd = -1;
  archive* raw = nullptr;
  Sha256 diff;
  uint64_t compressed = 0;
  uint64_t last_progress = 0;
  const std::function<void(uint64_t)>* progress = nullptr;
  std::string raw_error;
  std::unique_ptr<char[]> in{new char[kBufSize]};
  std::unique_ptr<char[]> out{new char[kBufSize]};
};

la_ssize_t raw_read_cb(archive* a, void* ud, const void** buf) {
  auto* s = static_cast<Stream*>(ud);
  for (;;) {
    ssize_t n = ::read(s->fd, s->in.get(), kBufSize);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      archive_set_error(a, errno, "read: %s", std::strerror(errno));
      return -1;
    }
    s->compressed += static_cast<uint64_t>(n);
    if (s->progress && *s->progress && s->compressed - s->last_progress >= (1u << 20)) {
      s->last_progress = s->compressed;
      (*s->progress)(s->compressed);
    }
    *buf = s->in.get();
    return n;
  }
}

la_ssize_t tar_read_cb(archive* a, void* ud, const void** buf) {
  auto* s = static_cast<Stream*>(ud);
  la_ssize_t n = archive_read_data(s->raw, s->out.get(), kBufSize);
  if (n < 0) {
    const char* m = archive_error_string(s->raw);
    s->raw_error = m ? m : "decompression failed";
    archive_set_error(a, EIO, "%s", s->raw_error.c_str());
    return -1;
  }
  s->diff.update(s->out.get(), static_cast<size_t>(n));
  *buf = s->out.get();
  return n;
}

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

struct PendingDir {
  std::string path;
  timespec mtime;
};

class Unpacker {
 public:
  Unpacker(std::string blob, int root, const UnpackLimits& lim, const std::vector<int>& lowers)
      : blob_(std::move(blob)), root_(root), lim_(lim), lowers_(lowers) {}

  void entry(archive* a, archive_entry* e, UnpackResult& res);
  void finish();

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("layer " + blob_ + ": entry '" + cur_ + "': " + why +
                "; the image is corrupt or hostile, nothing of it was kept");
  }
  [[noreturn]] void fail_errno(const std::string& what, int err = errno) const {
    fail(what + ": " + std::strerror(err) + " (" + errno_name(err) + ")");
  }
  // Splits an entry path into components; empty result = the layer root.
  std::vector<std::string> split(const char* raw, const char* what) const;
  static std::string join(const std::vector<std::string>& c, size_t n);
  int parent_fd(const std::vector<std::string>& comps);
  void remove_existing(int pfd, const std::string& base, bool keep_dir, bool* was_dir);
  void apply_meta(int fd, int pfd, const std::string& base, archive_entry* e, bool is_link);
  void apply_xattrs(int fd, archive_entry* e);
  void inherit_from_lowers(int pfd, const std::string& base, const std::string& path);
  void check_symlink(const std::vector<std::string>& comps, const char* target) const;

  std::string blob_;
  int root_;
  UnpackLimits lim_;
  std::string cur_;
  std::string cached_parent_ = "\x01";
  Fd cached_fd_;
  std::vector<PendingDir> dirs_;
  const std::vector<int>& lowers_;
  bool root_user_ = ::geteuid() == 0;
};

std::vector<std::string> Unpacker::split(const char* raw, const char* what) const {
  if (!raw || !*raw) fail(std::string("empty ") + what);
  std::string_view p(raw);
  if (p.size() > kMaxPath) fail(std::string(what) + " is longer than 4096 bytes");
  bool absolute = p.front() == '/';
  std::vector<std::string> comps;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view c = p.substr(i, j - i);
    if (c == "..") fail(std::string(what) + " has a '..' component");
    if (!c.empty() && c != ".") comps.emplace_back(c);
    i = j + 1;
  }
  // "/" alone is the root entry some tools (umoci) write; any other absolute path is hostile.
  if (absolute && !comps.empty()) fail(std::string(what) + " is an absolute path");
  return comps;
}

std::string Unpacker::join(const std::vector<std::string>& c, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += '/';
    s += c[i];
  }
  return s;
}

// Opens (creating missing directories 0755 root:root, as docker does) the parent
// of comps.back(), confined to the layer.
int Unpacker::parent_fd(const std::vector<std::string>& comps) {
  std::string ppath = join(comps, comps.size() - 1);
  if (ppath == cached_parent_ && cached_fd_.fd >= 0) return cached_fd_.fd;
  cached_fd_.reset();
  cached_parent_ = "\x01";
  int fd = openat2_beneath(root_, ppath, O_PATH | O_DIRECTORY);
  if (fd < 0 && errno == ENOENT) {
    // Create the missing parents one by one, each checked again.
    for (size_t n = 1; n < comps.size(); ++n) {
      std::string sub = join(comps, n);
      Fd f(openat2_beneath(root_, sub, O_PATH | O_DIRECTORY));
      if (f.fd >= 0) continue;
      if (errno != ENOENT) break;
      Fd up(openat2_beneath(root_, join(comps, n - 1), O_PATH | O_DIRECTORY));
      if (up.fd < 0) break;
      if (::mkdirat(up.fd, comps[n - 1].c_str(), 0755) < 0) {
        if (errno == EEXIST) continue;
        fail_errno("create parent " + sub);
      }
      inherit_from_lowers(up.fd, comps[n - 1], sub);
    }
    fd = openat2_beneath(root_, ppath, O_PATH | O_DIRECTORY);
  }
  if (fd < 0) {
    if (errno == EXDEV || errno == ELOOP)
      fail("its parent '" + ppath + "' goes through a symlink that leads outside the layer");
    if (errno == ENOTDIR) fail("its parent '" + ppath + "' is not a directory");
    fail_errno("open parent '" + ppath + "'");
  }
  cached_fd_ = Fd(fd);
  cached_parent_ = ppath;
  return fd;
}

// A directory the tar implies but does not list looks as it does below.
void Unpacker::inherit_from_lowers(int pfd, const std::string& base, const std::string& path) {
  for (int lfd : lowers_) {
    struct stat st;
    Fd l(openat2_beneath(lfd, path, O_PATH | O_NOFOLLOW));
    if (l.fd < 0 || ::fstat(l.fd, &st) < 0) continue;
    if (!S_ISDIR(st.st_mode)) return;  // a file or whiteout hides what is further down
    if (::fchownat(pfd, base.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 && root_user_)
      fail_errno("chown parent " + path);
    if (::fchmodat(pfd, base.c_str(), st.st_mode & 07777, 0) < 0) fail_errno("chmod parent " + path);
    dirs_.push_back({path, st.st_mtim});
    return;
  }
}

void Unpacker::remove_existing(int pfd, const std::string& base, bool keep_dir, bool* was_dir) {
  struct stat st;
  *was_dir = false;
  if (::fstatat(pfd, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno == ENOENT) return;
    fail_errno("stat existing entry");
  }
  if (S_ISDIR(st.st_mode) && keep_dir) {
    *was_dir = true;
    return;
  }
  // A later entry replaces an earlier one (tar semantics). `pfd` is the cached
  // parent itself, so the cache never points into what is removed here.
  remove_tree_at(pfd, base, "layer entry " + cur_);
}

void Unpacker::apply_xattrs(int fd, archive_entry* e) {
  archive_entry_xattr_reset(e);
  const char* name;
  const void* value;
  size_t size;
  while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
    std::string_view n(name ? name : "");
    // Only xattrs a rootfs legitimately carries. trusted.overlay.* in particular
    // must never come from an image: it would forge whiteouts or redirects.
    // user.overlay.* neither: overlayfs in a user namespace (mount option
    // userxattr, runtime/linux/mounts.cpp) reads its whiteouts and opaque marks there.
    if ((n.substr(0, 5) != "user." && n != "security.capability") || n.substr(0, 13) == "user.overlay.") {
      log::debug("layer " + blob_ + ": entry '" + cur_ + "': ignoring xattr " + std::string(n));
      continue;
    }
    if (size > kMaxXattrValue) fail("xattr " + std::string(n) + " is larger than 64 KiB");
    if (::fsetxattr(fd, name, value, size, 0) < 0) {
      if (errno == ENOTSUP || errno == EPERM) {
        log::warn("layer " + blob_ + ": entry '" + cur_ + "': cannot set xattr " + std::string(n) + ": " +
                  std::strerror(errno));
        continue;
      }
      fail_errno("set xattr " + std::string(n));
    }
  }
}

// Owner, then mode (chown clears setuid bits), then mtime. `fd` >= 0 is the
// object itself (not O_PATH); else pfd/base with AT_SYMLINK_NOFOLLOW (symlinks).
void Unpacker::apply_meta(int fd, int pfd, const std::string& base, archive_entry* e, bool is_link) {
  uid_t uid = static_cast<uid_t>(archive_entry_uid(e));
  gid_t gid = static_cast<gid_t>(archive_entry_gid(e));
  int r = fd >= 0 ? ::fchown(fd, uid, gid) : ::fchownat(pfd, base.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
  if (r < 0 && (root_user_ || errno != EPERM)) fail_errno("chown");
  if (!is_link) {
    mode_t perm = archive_entry_perm(e) & 07777;
    if (::fchmod(fd, perm) < 0) fail_errno("chmod");
  }
  timespec ts[2];
  ts[0].tv_sec = archive_entry_atime_is_set(e) ? archive_entry_atime(e) : archive_entry_mtime(e);
  ts[0].tv_nsec = archive_entry_atime_is_set(e) ? archive_entry_atime_nsec(e) : archive_entry_mtime_nsec(e);
  ts[1].tv_sec = archive_entry_mtime(e);
  ts[1].tv_nsec = archive_entry_mtime_nsec(e);
  r = fd >= 0 ? ::futimens(fd, ts) : ::utimensat(pfd, base.c_str(), ts, AT_SYMLINK_NOFOLLOW);
  if (r < 0) fail_errno("set mtime");
}

void Unpacker::check_symlink(const std::vector<std::string>&, const char* target) const {
  if (!target || !*target) fail("symlink with an empty target");
  std::string_view t(target);
  if (t.size() > kMaxPath) fail("symlink target is longer than 4096 bytes");
  // A symlink's target is data, as in docker and containerd: "/bad -> ../x"
  // is an ordinary link (at run time ".." of the sandbox's "/" is "/"). What
  // must never happen is that sbx follows one out of the layer while it
  // unpacks: every path is opened with openat2 RESOLVE_BENEATH (openat2_beneath),
  // so an entry below such a link fails there ("leads outside the layer").
}

void Unpacker::entry(archive* a, archive_entry* e, UnpackResult& res) {
  const char* raw = archive_entry_pathname(e);
  cur_ = raw ? std::string(raw).substr(0, 512) : "";
  if (++res.entries > lim_.max_entries) fail("the layer has more than " + std::to_string(lim_.max_entries) + " entries");
  std::vector<std::string> comps = split(raw, "path");
  const char* hardlink = archive_entry_hardlink(e);
  mode_t type = archive_entry_filetype(e);

  if (comps.empty()) {  // the root entry: only a directory may describe it
    if (hardlink || type != AE_IFDIR) fail("the layer root must be a directory");
    Fd d(openat2_beneath(root_, ".", O_RDONLY | O_DIRECTORY));
    if (d.fd < 0) fail_errno("open layer root");
    apply_meta(d.fd, -1, "", e, false);
    apply_xattrs(d.fd, e);
    dirs_.push_back({"", {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}});
    return;
  }
  const std::string& base = comps.back();
  if (base.size() > 255) fail("a name is longer than 255 bytes");

  // Whiteouts (image-spec layer.md) become overlayfs whiteouts.
  if (base.rfind(".wh.", 0) == 0) {
    int pfd = parent_fd(comps);
    if (base == ".wh..wh..opq") {
      Fd d(openat2_beneath(root_, join(comps, comps.size() - 1), O_RDONLY | O_DIRECTORY));
      if (d.fd < 0) fail_errno("open opaque directory");
      if (::fsetxattr(d.fd, "trusted.overlay.opaque", "y", 1, 0) < 0)
        fail_errno("mark directory opaque (xattr trusted.overlay.opaque)");
      // The same mark for overlayfs mounted in a sandbox's user namespace
      // (option userxattr: trusted.* is out of its reach there).
      if (::fsetxattr(d.fd, "user.overlay.opaque", "y", 1, 0) < 0 && errno != ENOTSUP)
        fail_errno("mark directory opaque (xattr user.overlay.opaque)");
      return;
    }
    if (base.rfind(".wh..wh.", 0) == 0) return;  // other aufs metadata (e.g. .wh..wh.plnk): not content
    std::string name = base.substr(4);
    if (name.empty() || name == "." || name == "..") fail("invalid whiteout name");
    bool was_dir;
    remove_existing(pfd, name, false, &was_dir);
    if (::mknodat(pfd, name.c_str(), S_IFCHR | 0, ::makedev(0, 0)) < 0) fail_errno("create whiteout device");
    return;
  }

  int pfd = parent_fd(comps);
  if (hardlink) {
    std::vector<std::string> tcomps = split(hardlink, "hard link target");
    if (tcomps.empty()) fail("hard link to the layer root");
    Fd t(openat2_beneath(root_, join(tcomps, tcomps.size()), O_PATH | O_NOFOLLOW));
    if (t.fd < 0) {
      if (errno == ENOENT) fail("hard link target '" + std::string(hardlink) + "' is not in this layer");
      if (errno == EXDEV || errno == ELOOP) fail("hard link target '" + std::string(hardlink) + "' leads outside the layer");
      fail_errno("open hard link target '" + std::string(hardlink) + "'");
    }
    struct stat st;
    if (::fstat(t.fd, &st) < 0) fail_errno("stat hard link target");
    if (S_ISDIR(st.st_mode)) fail("hard link to a directory");
    if (join(tcomps, tcomps.size()) == join(comps, comps.size())) return;  // link to itself
    bool was_dir;
    remove_existing(pfd, base, false, &was_dir);
    if (::linkat(t.fd, "", pfd, base.c_str(), AT_EMPTY_PATH) < 0) fail_errno("create hard link");
    return;
  }

  bool was_dir = false;
  remove_existing(pfd, base, type == AE_IFDIR, &was_dir);
  switch (type) {
    case AE_IFREG: {
      Fd f(::openat(pfd, base.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (f.fd < 0) fail_errno("create file");
      const void* buf;
      size_t len;
      la_int64_t off;
      for (;;) {
        int r = archive_read_data_block(a, &buf, &len, &off);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) fail(std::string("read file data: ") + (archive_error_string(a) ?: "error"));
        if (off < 0 || static_cast<uint64_t>(off) + len > lim_.max_bytes) fail("file data beyond the size limit");
        res.bytes += len;
        if (res.bytes > lim_.max_bytes)
          fail("the layer unpacks to more than " + std::to_string(lim_.max_bytes) + " bytes");
        const char* p = static_cast<const char*>(buf);
        while (len > 0) {
          ssize_t w = ::pwrite(f.fd, p, len, off);
          if (w < 0) {
            if (errno == EINTR) continue;
            fail_errno("write file");
          }
          p += w;
          len -= static_cast<size_t>(w);
          off += w;
        }
      }
      la_int64_t size = archive_entry_size(e);
      if (size > 0 && static_cast<uint64_t>(size) > lim_.max_bytes) fail("file larger than the size limit");
      if (size > 0 && ::ftruncate(f.fd, size) < 0) fail_errno("set file size");  // sparse tail
      apply_meta(f.fd, pfd, base, e, false);
      apply_xattrs(f.fd, e);
      return;
    }
    case AE_IFDIR: {
      if (!was_dir && ::mkdirat(pfd, base.c_str(), 0700) < 0) fail_errno("create directory");
      Fd d(::openat(pfd, base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (d.fd < 0) fail_errno("open directory");
      apply_meta(d.fd, pfd, base, e, false);
      apply_xattrs(d.fd, e);
      // Directory mtimes change as children are added: set them again at the end.
      dirs_.push_back({join(comps, comps.size()), {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}});
      return;
    }
    case AE_IFLNK: {
      const char* target = archive_entry_symlink(e);
      check_symlink(comps, target);
      if (::symlinkat(target, pfd, base.c_str()) < 0) fail_errno("create symlink");
      apply_meta(-1, pfd, base, e, true);
      return;
    }
    case AE_IFCHR:
    case AE_IFBLK:
    case AE_IFIFO: {
      dev_t dev = type == AE_IFIFO ? 0 : ::makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
      if (::mknodat(pfd, base.c_str(), type | 0600, dev) < 0) fail_errno("create device node or fifo");
      // Re-open without following (device nodes: O_PATH is enough for fchownat/utimensat).
      uid_t uid = static_cast<uid_t>(archive_entry_uid(e));
      gid_t gid = static_cast<gid_t>(archive_entry_gid(e));
      if (::fchownat(pfd, base.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && (root_user_ || errno != EPERM))
        fail_errno("chown");
      if (::fchmodat(pfd, base.c_str(), archive_entry_perm(e) & 07777, 0) < 0) fail_errno("chmod");
      timespec ts[2] = {{archive_entry_mtime(e), archive_entry_mtime_nsec(e)},
                        {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
      if (::utimensat(pfd, base.c_str(), ts, AT_SYMLINK_NOFOLLOW) < 0) fail_errno("set mtime");
      return;
    }
    case AE_IFSOCK:
      return;  // sockets are not content (GNU tar skips them too)
    default:
      fail("unsupported entry type " + std::to_string(type));
  }
}

void Unpacker::finish() {
  cur_ = "(directory mtimes)";
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    Fd d(openat2_beneath(root_, it->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    if (d.fd < 0) continue;  // replaced later by a non-directory
    timespec ts[2] = {it->mtime, it->mtime};
    if (::futimens(d.fd, ts) < 0) fail_errno("set mtime of " + it->path);
  }
}

}  // namespace

UnpackResult unpack_layer(const std::string& blob_path, const std::string& dest,
                          const std::function<void(uint64_t)>& progress, const std::vector<std::string>& lowers,
                          const UnpackLimits& limits) {
  Fd blob(::open(blob_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (blob.fd < 0) throw_errno("open layer " + blob_path);
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) throw_errno("open layer directory " + dest);

  Stream s;
  s.fd = blob.fd;
  s.progress = &progress;
  ArchivePtr raw(archive_read_new());
  ArchivePtr tar(archive_read_new());
  if (!raw || !tar) throw Error("libarchive: out of memory");
  archive_read_support_filter_gzip(raw.get());
  archive_read_support_filter_zstd(raw.get());
  archive_read_support_format_raw(raw.get());
  auto raw_fail = [&](const char* what) {
    const char* m = archive_error_string(raw.get());
    throw Error("layer " + blob_path + ": " + what + ": " + (m ? m : "unknown error") +
                "; the blob is corrupt or not a tar (plain, gzip or zstd)");
  };
  if (archive_read_open(raw.get(), &s, nullptr, raw_read_cb, nullptr) != ARCHIVE_OK) raw_fail("open");
  archive_entry* re;
  if (archive_read_next_header(raw.get(), &re) != ARCHIVE_OK) raw_fail("decompress");
  s.raw = raw.get();

  archive_read_support_format_tar(tar.get());
  archive_read_support_format_empty(tar.get());
  if (archive_read_open(tar.get(), &s, nullptr, tar_read_cb, nullptr) != ARCHIVE_OK) {
    const char* m = archive_error_string(tar.get());
    throw Error("layer " + blob_path + ": not a tar archive: " + (m ? m : "unknown error"));
  }
  std::vector<Fd> lower_fds;
  std::vector<int> lfds;
  for (const auto& l : lowers) {
    lower_fds.emplace_back(::open(l.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (lower_fds.back().fd < 0) throw_errno("open lower layer " + l);
    lfds.push_back(lower_fds.back().fd);
  }
  UnpackResult res;
  Unpacker u(blob_path, root.fd, limits, lfds);
  for (;;) {
    archive_entry* e;
    int r = archive_read_next_header(tar.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      const char* m = archive_error_string(tar.get());
      throw Error("layer " + blob_path + ": " + (m ? m : "tar read error") +
                  " (truncated or corrupt archive); nothing of it was kept");
    }
    u.entry(tar.get(), e, res);
  }
  u.finish();
  // The diff id covers the whole uncompressed stream, padding after the tar end too.
  for (;;) {
    la_ssize_t n = archive_read_data(raw.get(), s.out.get(), kBufSize);
    if (n < 0) raw_fail("decompress");
    if (n == 0) break;
    s.diff.update(s.out.get(), static_cast<size_t>(n));
  }
  if (progress) progress(s.compressed);
  res.diff_id_hex = s.diff.hex();
  return res;
}

}  // namespace sbx::oci
