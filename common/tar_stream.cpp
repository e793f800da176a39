#include "common/tar_stream.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/fd.h"

namespace sbx {

std::vector<std::pair<off_t, off_t>> data_extents(int fd, off_t size) {
  std::vector<std::pair<off_t, off_t>> out;
  for (off_t pos = 0; pos < size;) {
    off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // holes to the end
    if (data < 0 && (errno == EINVAL || errno == EOPNOTSUPP)) {
      out.emplace_back(pos, size - pos);  // no SEEK_DATA here: data
      break;
    }
    if (data < 0) throw_errno("find the data of a file (SEEK_DATA)");
    if (data >= size) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) throw_errno("find the holes of a file (SEEK_HOLE)");
    hole = std::min(hole, size);
    out.emplace_back(data, hole - data);
    pos = hole;
  }
  return out;
}

namespace {

struct Writer {
  const TarSink* sink;
  bool stopped = false;
};

la_ssize_t sink_write(struct archive*, void* u, const void* b, size_t n) {
  auto* w = static_cast<Writer*>(u);
  if (!(*w->sink)(std::string_view(static_cast<const char*>(b), n))) {
    w->stopped = true;
    return -1;
  }
  return static_cast<la_ssize_t>(n);
}

class Tar {
 public:
  explicit Tar(const TarSink& sink) : a_(archive_write_new()) {
    w_.sink = &sink;
    archive_write_set_format_pax_restricted(a_);
    // 64 KiB blocks: fewer, larger writes to the sink; the last one is not padded.
    archive_write_set_bytes_per_block(a_, 65536);
    archive_write_set_bytes_in_last_block(a_, 1);
    if (archive_write_open(a_, &w_, nullptr, sink_write, nullptr) != ARCHIVE_OK) fail("start the tar");
  }
  ~Tar() { archive_write_free(a_); }
  Tar(const Tar&) = delete;
  Tar& operator=(const Tar&) = delete;

  bool stopped() const { return w_.stopped; }

  // False: the sink stopped.
  bool add(int dirfd, const char* entry, const std::string& path, const std::string& name, int depth) {
    if (depth > 256) throw Error("tar: directory tree too deep at " + path);
    struct stat st;
    if (::fstatat(dirfd, entry, &st, AT_SYMLINK_NOFOLLOW) < 0) throw_errno("tar: stat " + path);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) return true;
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    Fd fd;
    if (!S_ISLNK(st.st_mode)) {
      fd = Fd(::openat(dirfd, entry, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0)));
      if (fd.fd < 0) throw_errno("tar: open " + path);
      if (::fstat(fd.fd, &st) < 0) throw_errno("tar: stat " + path);
    }
    archive_entry_copy_stat(e.get(), &st);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_nlink(e.get(), 1);  // no hard links in the tar: every file is whole
    std::vector<std::pair<off_t, off_t>> extents;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t k = ::readlinkat(dirfd, entry, buf, sizeof buf - 1);
      if (k < 0) throw_errno("tar: readlink " + path);
      buf[k] = 0;
      archive_entry_set_symlink(e.get(), buf);
      archive_entry_set_size(e.get(), 0);
    } else if (S_ISREG(st.st_mode)) {
      extents = data_extents(fd.fd, st.st_size);
      bool sparse = !(extents.size() == 1 && extents[0].first == 0 && extents[0].second == st.st_size);
      if (sparse && st.st_size > 0) {
        for (const auto& [off, len] : extents) archive_entry_sparse_add_entry(e.get(), off, len);
        // A hole at the end: an empty extent at the end marks the size.
        if (extents.empty() || extents.back().first + extents.back().second < st.st_size)
          archive_entry_sparse_add_entry(e.get(), st.st_size, 0);
      }
    } else {
      archive_entry_set_size(e.get(), 0);
    }
    if (archive_write_header(a_, e.get()) != ARCHIVE_OK) return stopped() ? false : fail("write the header of " + path);
    if (S_ISREG(st.st_mode)) {
      if (!data(fd.fd, extents, st.st_size, path)) return false;
    } else if (S_ISDIR(st.st_mode)) {
      int dup = ::dup(fd.fd);
      if (dup < 0) throw_errno("tar: read the directory " + path);
      std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dup), ::closedir);
      if (!d) {
        ::close(dup);
        throw_errno("tar: read the directory " + path);
      }
      while (struct dirent* de = ::readdir(d.get())) {
        if (!std::strcmp(de->d_name, ".") || !std::strcmp(de->d_name, "..")) continue;
        if (!add(fd.fd, de->d_name, path + "/" + de->d_name, name + "/" + de->d_name, depth + 1)) return false;
      }
    }
    return true;
  }

  bool finish() {
    if (archive_write_close(a_) != ARCHIVE_OK) return stopped() ? false : fail("finish the tar");
    return true;
  }

 private:
  // The file's bytes in order: the writer skips what its sparse map calls
  // holes, so for those it gets zeros that it never reads or sends.
  bool data(int fd, const std::vector<std::pair<off_t, off_t>>& extents, off_t size, const std::string& path) {
    static const std::string zeros(1 << 20, '\0');
    std::string buf(1 << 20, '\0');
    off_t pos = 0;
    auto put = [&](const char* p, size_t n) {
      while (n > 0) {
        la_ssize_t k = archive_write_data(a_, p, n);
        if (k <= 0) return stopped() ? false : fail("write " + path + " to the tar");
        p += k;
        n -= static_cast<size_t>(k);
      }
      return true;
    };
    auto gap = [&](off_t to) {
      for (; pos < to;) {
        size_t n = static_cast<size_t>(std::min<off_t>(to - pos, static_cast<off_t>(zeros.size())));
        if (!put(zeros.data(), n)) return false;
        pos += static_cast<off_t>(n);
      }
      return true;
    };
    for (const auto& [off, len] : extents) {
      if (!gap(off)) return false;
      for (off_t end = off + len; pos < end;) {
        ssize_t k = ::pread(fd, buf.data(), static_cast<size_t>(std::min<off_t>(end - pos, static_cast<off_t>(buf.size()))), pos);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) throw_errno("tar: read " + path);
        if (k == 0) {  // the file shrank under the tar: the rest as zeros keeps the promised size
          if (!gap(end)) return false;
          break;
        }
        if (!put(buf.data(), static_cast<size_t>(k))) return false;
        pos += k;
      }
    }
    return gap(size);
  }

  [[noreturn]] bool fail(const std::string& what) {
    const char* m = archive_error_string(a_);
    throw Error("tar: " + what + (m ? std::string(": ") + m : std::string()));
  }

  struct archive* a_;
  Writer w_;
};

}  // namespace

bool write_tar(const std::string& host_path, const std::string& name, const TarSink& sink) {
  std::string dir = host_path, base = host_path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto slash = dir.rfind('/');
  if (slash == std::string::npos) {
    base = dir;
    dir = ".";
  } else {
    base = dir.substr(slash + 1);
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd < 0) throw_errno("tar: open " + dir);
  Tar t(sink);
  if (!t.add(dfd.fd, base.c_str(), host_path, name, 0)) return false;
  return t.finish();
}

}  // namespace sbx
