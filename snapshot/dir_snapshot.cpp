#include "snapshot/dir_snapshot.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/openat2.h"
#include "runtime/linux/cgroup_freeze.h"
#include "snapshot/tree_tar.h"

namespace sbx::snapshot {

namespace {

std::string dirs_of(const std::string& root) { return root + "/snapshots/dirs"; }

/// Rejects what must never appear in an extracted path.
bool safe_relative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (p.compare(i, j - i, "..") == 0 && j - i == 2) return false;
    i = j + 1;
  }
  return true;
}

}  // namespace

SnapshotRecord snapshot_dir(const std::string& root, const DirSnapshotRequest& req) {
  fs::mkdir_p(dirs_of(root), 0700);
  std::string tmp = dirs_of(root) + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(::gettid()) + ".tar.zst";
  TreeTarResult r;
  try {
    std::unique_ptr<runtime::CgroupFreeze> freeze;
    if (!req.freeze_cgroups.empty())
      freeze = std::make_unique<runtime::CgroupFreeze>(req.freeze_cgroups, std::chrono::milliseconds(5000), req.freeze_members);
    TreeTarOptions o;
    o.compression = Compression::Zstd;
    o.uid_map = req.uid_map;
    o.gid_map = req.gid_map;
    r = write_tree_tar(req.dir, tmp, o);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  std::string blob = dirs_of(root) + "/" + r.digest_hex + ".tar.zst";
  if (::rename(tmp.c_str(), blob.c_str()) < 0) {  // same content: replaces identical bytes
    int e = errno;
    ::unlink(tmp.c_str());
    throw_errno("move snapshot into place at " + blob, e);
  }
  SnapshotRecord rec;
  rec.kind = "dir";
  rec.name = req.name.empty() ? "dir-" + r.digest_hex.substr(0, 12) : req.name;
  rec.id = r.digest_hex;
  rec.size = r.size;
  rec.parent = req.parent;
  rec.source = req.source.empty() ? req.dir : req.source;
  rec.created = now_rfc3339();
  put_record(root, rec);
  return rec;
}

SnapshotRecord snapshot_sandbox_dir(const std::string& root, pid_t pid, const std::string& path,
                                    DirSnapshotRequest req) {
  std::string proot = "/proc/" + std::to_string(pid) + "/root";
  int rfd = ::open(proot.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rfd < 0) throw_errno("open the root of sandbox process " + std::to_string(pid) + " (is it still running?)");
  int fd = openat2_in_root(rfd, path, O_PATH | O_DIRECTORY);
  int e = errno;
  ::close(rfd);
  if (fd < 0) throw_errno("open " + path + " inside the sandbox", e);
  req.dir = "/proc/self/fd/" + std::to_string(fd);
  if (req.source.empty()) req.source = path;
  try {
    SnapshotRecord r = snapshot_dir(root, req);
    ::close(fd);
    return r;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

void extract_dir_snapshot(const std::string& root, const std::string& name, const std::string& dest) {
  SnapshotRecord rec = find_record(root, name, "dir");
  std::string blob = dirs_of(root) + "/" + rec.id + ".tar.zst";
  fs::mkdir_p(dest, 0755);
  std::unique_ptr<struct archive, int (*)(struct archive*)> in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  archive_read_support_filter_zstd(in.get());
  if (archive_read_open_filename(in.get(), blob.c_str(), 1 << 20) != ARCHIVE_OK)
    throw Error("open snapshot " + name + " (" + blob + "): " + archive_error_string(in.get()));
  std::unique_ptr<struct archive, int (*)(struct archive*)> out(archive_write_disk_new(), archive_write_free);
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                                ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_UNLINK);
  archive_write_disk_set_standard_lookup(out.get());
  struct archive_entry* e;
  int r;
  while ((r = archive_read_next_header(in.get(), &e)) == ARCHIVE_OK) {
    std::string p = archive_entry_pathname(e);
    if (!safe_relative(p)) throw Error("snapshot " + name + ": entry '" + p + "' leaves the target directory; refused");
    archive_entry_set_pathname(e, (dest + "/" + p).c_str());
    if (const char* hl = archive_entry_hardlink(e)) {
      std::string h = hl;
      if (!safe_relative(h)) throw Error("snapshot " + name + ": hard link '" + p + "' points outside; refused");
      archive_entry_set_hardlink(e, (dest + "/" + h).c_str());
    }
    if (archive_write_header(out.get(), e) < ARCHIVE_WARN)
      throw Error("extract " + p + " of snapshot " + name + " into " + dest + ": " + archive_error_string(out.get()));
    const void* buf;
    size_t len;
    la_int64_t off;
    int dr;
    while ((dr = archive_read_data_block(in.get(), &buf, &len, &off)) == ARCHIVE_OK)
      if (archive_write_data_block(out.get(), buf, len, off) < ARCHIVE_WARN)
        throw Error("write " + p + " into " + dest + ": " + archive_error_string(out.get()));
    if (dr != ARCHIVE_EOF) throw Error("read snapshot " + name + " at " + p + ": " + archive_error_string(in.get()));
    if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN)
      throw Error("finish " + p + " in " + dest + ": " + archive_error_string(out.get()));
  }
  if (r != ARCHIVE_EOF) throw Error("read snapshot " + name + " (" + blob + "): " + archive_error_string(in.get()));
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    throw Error("finish extracting into " + dest + ": " + archive_error_string(out.get()));
  touch_record(root, name);
}

Mount mount_snapshot(const std::string& root, const std::string& spec, const std::string& copy_dir) {
  size_t c = spec.find(':');
  if (c == std::string::npos || c == 0 || c + 1 >= spec.size() || spec[c + 1] != '/')
    throw Error(ErrorKind::InvalidArgument, "invalid --mount-snapshot '" + spec + "': expected NAME:/ABSOLUTE/TARGET");
  std::string name = spec.substr(0, c), target = spec.substr(c + 1);
  extract_dir_snapshot(root, name, copy_dir);
  // The copy holds the ids the snapshot recorded (those the sandbox it came
  // from saw): a sandbox in a user namespace must see them the same, so they
  // map 1:1 (not a volume's owner mapping, under which a file of id 1000
  // would be nobody's). The copy is this sandbox's alone, in a 0700 dir.
  return Mount{target, "bind", copy_dir, {"rbind", "rw", "idmap=host"}};
}

}  // namespace sbx::snapshot
