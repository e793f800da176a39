#include "snapshot/tree_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/error.h"

namespace sbx::snapshot {

namespace {

constexpr const char* kWhiteoutPrefix = ".wh.";
constexpr const char* kOpaqueMarker = ".wh..wh..opq";

std::string hex(const uint8_t* d, size_t n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[d[i] >> 4];
    s += k[d[i] & 15];
  }
  return s;
}

/// The output side: libarchive's bytes go to a file and through sha256.
struct Sink {
  int fd = -1;
  std::string path;
  sha256_ctx sha;
  uint64_t size = 0;
  std::string error;
};

la_ssize_t sink_write(struct archive*, void* p, const void* buf, size_t len) {
  auto* s = static_cast<Sink*>(p);
  const char* c = static_cast<const char*>(buf);
  size_t left = len;
  while (left > 0) {
    ssize_t n = ::write(s->fd, c, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      s->error = "write " + s->path + ": " + std::strerror(errno);
      return -1;
    }
    c += n;
    left -= static_cast<size_t>(n);
  }
  sha256_update(&s->sha, len, static_cast<const uint8_t*>(buf));
  s->size += len;
  return static_cast<la_ssize_t>(len);
}

/// A host id seen through a user namespace's map (see TreeTarOptions).
uint32_t to_container_id(uint32_t host, const std::vector<IdMapping>& map) {
  if (map.empty()) return host;
  for (const auto& m : map)
    if (host >= m.host_id && host - m.host_id < m.size) return m.container_id + (host - m.host_id);
  return 65534;
}

bool is_overlay_xattr(const std::string& name) {
  return name.rfind("trusted.overlay.", 0) == 0 || name.rfind("user.overlay.", 0) == 0;
}

/// Reads one xattr of an open file or of a path below dirfd (no follow).
/// Returns false when it is not set.
bool get_xattr(const std::string& proc_path, const std::string& name, std::string& value) {
  std::vector<char> buf(256);
  for (;;) {
    ssize_t n = ::lgetxattr(proc_path.c_str(), name.c_str(), buf.data(), buf.size());
    if (n >= 0) {
      value.assign(buf.data(), static_cast<size_t>(n));
      return true;
    }
    if (errno == ERANGE) {
      ssize_t want = ::lgetxattr(proc_path.c_str(), name.c_str(), nullptr, 0);
      if (want < 0) return false;
      buf.resize(static_cast<size_t>(want) + 1);
      continue;
    }
    if (errno == ENODATA || errno == ENOTSUP) return false;
    throw_errno("read xattr " + name + " of " + proc_path);
  }
}

/// overlayfs' xattr `name` ("opaque", "whiteout", …) in either namespace:
/// trusted.overlay.* (mounted by host root) or user.overlay.* (mounted in a
/// user namespace with the option userxattr; overlayfs.rst "User xattr").
bool overlay_xattr(const std::string& path, const std::string& name, std::string& value) {
  return get_xattr(path, "trusted.overlay." + name, value) || get_xattr(path, "user.overlay." + name, value);
}

/// All xattr names of a path (no follow), sorted.
std::vector<std::string> list_xattrs(const std::string& path) {
  std::vector<char> buf(1024);
  ssize_t n;
  for (;;) {
    n = ::llistxattr(path.c_str(), buf.data(), buf.size());
    if (n >= 0) break;
    if (errno == ENOTSUP) return {};
    if (errno != ERANGE) throw_errno("list xattrs of " + path);
    ssize_t want = ::llistxattr(path.c_str(), nullptr, 0);
    if (want < 0) throw_errno("list xattrs of " + path);
    buf.resize(static_cast<size_t>(want) + 1);
  }
  std::vector<std::string> names;
  for (ssize_t i = 0; i < n;) {
    std::string s(buf.data() + i);
    i += static_cast<ssize_t>(s.size()) + 1;
    if (!s.empty()) names.push_back(std::move(s));
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Walker {
 public:
  Walker(struct archive* a, const TreeTarOptions& o, std::string root) : a_(a), o_(o), root_(std::move(root)) {}

  void walk(const std::string& rel) {
    std::string abs = rel.empty() ? root_ : root_ + "/" + rel;
    DIR* d = ::opendir(abs.c_str());
    if (!d) throw_errno("open directory " + abs);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    int e = errno;
    ::closedir(d);
    if (e) throw_errno("read directory " + abs, e);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) entry(rel.empty() ? n : rel + "/" + n, n);
  }

  TreeTarResult result;

 private:
  void check(int r, const std::string& what) {
    if (r < ARCHIVE_WARN) throw Error("archive " + what + ": " + archive_error_string(a_));
  }

  void add_xattrs(struct archive_entry* ae, const std::string& abs) {
    for (const auto& name : list_xattrs(abs)) {
      if (o_.overlay_upper && is_overlay_xattr(name)) continue;
      std::string v;
      if (!get_xattr(abs, name, v)) continue;
      archive_entry_xattr_add_entry(ae, name.c_str(), v.data(), v.size());
    }
  }

  void write_whiteout(const std::string& rel, const std::string& base, const struct stat& st) {
    std::string dir = rel.substr(0, rel.size() - base.size());
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> ae(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(ae.get(), (dir + kWhiteoutPrefix + base).c_str());
    archive_entry_set_filetype(ae.get(), AE_IFREG);
    archive_entry_set_perm(ae.get(), 0644);
    archive_entry_set_uid(ae.get(), to_container_id(st.st_uid, o_.uid_map));
    archive_entry_set_gid(ae.get(), to_container_id(st.st_gid, o_.gid_map));
    archive_entry_set_mtime(ae.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    archive_entry_set_size(ae.get(), 0);
    check(archive_write_header(a_, ae.get()), "whiteout for " + rel);
    ++result.entries;
    ++result.whiteouts;
  }

  void entry(const std::string& rel, const std::string& base) {
    const std::string abs = root_ + "/" + rel;
    struct stat st;
    if (::lstat(abs.c_str(), &st) < 0) throw_errno("stat " + abs);
    if (S_ISSOCK(st.st_mode)) return;  // a tar cannot hold a socket; it is meaningless after restore anyway

    if (o_.overlay_upper) {
      std::string v;
      if (overlay_xattr(abs, "redirect", v) || overlay_xattr(abs, "metacopy", v))
        throw Error("cannot snapshot " + abs + ": it uses overlayfs redirect_dir/metacopy, which an OCI layer cannot express; mount the sandbox overlay with redirect_dir=off,metacopy=off");
      bool whiteout = (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) ||
                      (S_ISREG(st.st_mode) && st.st_size == 0 && overlay_xattr(abs, "whiteout", v));
      if (whiteout) {
        if (base.rfind(kWhiteoutPrefix, 0) == 0)
          throw Error("cannot snapshot " + abs + ": a whiteout whose name starts with '.wh.' cannot be written as an OCI layer entry");
        write_whiteout(rel, base, st);
        return;
      }
    }

    std::unique_ptr<archive_entry, void (*)(archive_entry*)> ae(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(ae.get(), S_ISDIR(st.st_mode) ? (rel + "/").c_str() : rel.c_str());
    archive_entry_set_mode(ae.get(), st.st_mode);
    archive_entry_set_uid(ae.get(), to_container_id(st.st_uid, o_.uid_map));
    archive_entry_set_gid(ae.get(), to_container_id(st.st_gid, o_.gid_map));
    archive_entry_set_mtime(ae.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    add_xattrs(ae.get(), abs);

    if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
      auto key = std::make_pair(st.st_dev, st.st_ino);
      auto it = links_.find(key);
      if (it != links_.end()) {
        archive_entry_set_hardlink(ae.get(), it->second.c_str());
        archive_entry_set_size(ae.get(), 0);
        check(archive_write_header(a_, ae.get()), "entry " + rel);
        ++result.entries;
        return;
      }
      links_.emplace(key, rel);
    }

    if (S_ISLNK(st.st_mode)) {
      std::vector<char> buf(static_cast<size_t>(st.st_size) + 2);
      ssize_t n = ::readlink(abs.c_str(), buf.data(), buf.size() - 1);
      if (n < 0) throw_errno("read symlink " + abs);
      buf[static_cast<size_t>(n)] = 0;
      archive_entry_set_symlink(ae.get(), buf.data());
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      archive_entry_set_rdevmajor(ae.get(), major(st.st_rdev));
      archive_entry_set_rdevminor(ae.get(), minor(st.st_rdev));
    }
    archive_entry_set_size(ae.get(), S_ISREG(st.st_mode) ? st.st_size : 0);
    check(archive_write_header(a_, ae.get()), "entry " + rel);
    ++result.entries;

    if (S_ISREG(st.st_mode) && st.st_size > 0) copy_data(abs, static_cast<uint64_t>(st.st_size));

    if (S_ISDIR(st.st_mode)) {
      std::string v;
      if (o_.overlay_upper && overlay_xattr(abs, "opaque", v) && v == "y") {
        std::unique_ptr<archive_entry, void (*)(archive_entry*)> op(archive_entry_new(), archive_entry_free);
        archive_entry_set_pathname(op.get(), (rel + "/" + kOpaqueMarker).c_str());
        archive_entry_set_filetype(op.get(), AE_IFREG);
        archive_entry_set_perm(op.get(), 0644);
        archive_entry_set_mtime(op.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        archive_entry_set_size(op.get(), 0);
        check(archive_write_header(a_, op.get()), "opaque marker for " + rel);
        ++result.entries;
        ++result.whiteouts;
      }
      walk(rel);
    }
  }

  /// Copies exactly `size` bytes (the size in the header): a file that shrank
  /// meanwhile is padded with zeros, one that grew is cut, so the tar stays valid.
  void copy_data(const std::string& abs, uint64_t size) {
    int fd = ::open(abs.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("open " + abs);
    std::vector<char> buf(1 << 20);
    uint64_t left = size;
    while (left > 0) {
      ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(left, buf.size()));
      if (n < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        ::close(fd);
        throw_errno("read " + abs, e);
      }
      if (n == 0) {  // shrank: pad
        std::fill(buf.begin(), buf.end(), 0);
        n = static_cast<ssize_t>(std::min<uint64_t>(left, buf.size()));
      }
      if (archive_write_data(a_, buf.data(), static_cast<size_t>(n)) < 0) {
        ::close(fd);
        throw Error("archive data of " + abs + ": " + archive_error_string(a_));
      }
      left -= static_cast<uint64_t>(n);
    }
    ::close(fd);
    result.content_bytes += size;
  }

  struct archive* a_;
  const TreeTarOptions& o_;
  std::string root_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

}  // namespace

TreeTarResult write_tree_tar(const std::string& dir, const std::string& out_path, const TreeTarOptions& opts) {
  struct stat st;
  if (::stat(dir.c_str(), &st) < 0) throw_errno("snapshot source " + dir);
  if (!S_ISDIR(st.st_mode)) throw Error("snapshot source " + dir + " is not a directory");

  Sink sink;
  sink.path = out_path;
  sha256_init(&sink.sha);
  sink.fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (sink.fd < 0) throw_errno("create " + out_path);
  std::unique_ptr<struct archive, int (*)(struct archive*)> a(archive_write_new(), archive_write_free);
  auto fail = [&](const std::string& what) {
    std::string msg = what + " for " + out_path + ": " + (sink.error.empty() ? archive_error_string(a.get()) : sink.error);
    ::close(sink.fd);
    throw Error(msg);
  };
  // pax_restricted: plain ustar headers unless a field needs PAX (long
  // names, xattrs, ns mtimes), as docker and containers/storage write.
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK) fail("set tar format");
  if (opts.compression == Compression::Zstd) {
    if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK) fail("enable zstd");
    std::string lvl = "zstd:compression-level=" + std::to_string(opts.zstd_level);
    if (archive_write_set_options(a.get(), lvl.c_str()) != ARCHIVE_OK) fail("set zstd level");
  }
  // No block padding beyond the tar end-of-archive blocks: the digest covers exactly what is stored.
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open2(a.get(), &sink, nullptr, sink_write, nullptr, nullptr) != ARCHIVE_OK) fail("open archive");

  Walker w(a.get(), opts, dir);
  try {
    w.walk("");
  } catch (...) {
    ::close(sink.fd);
    throw;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) fail("finish archive");
  if (::fsync(sink.fd) < 0) {
    int e = errno;
    ::close(sink.fd);
    throw_errno("fsync " + out_path, e);
  }
  ::close(sink.fd);
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_digest(&sink.sha, sizeof d, d);
  w.result.digest_hex = hex(d, sizeof d);
  w.result.size = sink.size;
  return w.result;
}

}  // namespace sbx::snapshot
