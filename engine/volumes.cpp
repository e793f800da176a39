// Engine: named volumes — the store (create, list, inspect, remove, prune)
// and attaching volumes to a new sandbox (auto-create, the first-use copy of
// the image's files, the references that make a volume "in use"). Layout:
// engine/volumes.h. The -v/--mount parsers: engine/mount_flags.cpp; the
// local driver's options: engine/local_volume_driver.cpp.
#include "engine/volumes.h"
#include "engine/volume_holds.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/text.h"
#include "common/units.h"
#include "engine/engine.h"
#include "engine/local_volume_driver.h"
#include "engine/mount_flags.h"
#include "engine/volume_gc.h"
#include "runtime/linux/userns.h"
#include "runtime/backends.h"
#include "runtime/state.h"

namespace sbx::engine {

using json = nlohmann::json;

namespace {

std::string now_rfc3339() {
  char buf[32];
  time_t t = ::time(nullptr);
  struct tm tm {};
  ::gmtime_r(&t, &tm);
  ::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string volume_dir(const std::string& root, const std::string& name) { return volumes_dir(root) + "/" + name; }

/// The record of volume dir `dir` (named `name`). Throws sbx::Error.
Volume read_volume(const std::string& root, const std::string& name) {
  std::string dir = volume_dir(root, name);
  Volume v;
  v.name = name;
  v.mountpoint = dir + "/_data";
  try {
    json j = json::parse(fs::read_file(dir + "/volume.json"));
    v.driver = j.value("driver", "local");
    v.created = j.value("created", "");
    v.labels = j.value("labels", std::map<std::string, std::string>{});
    v.options = j.value("options", std::map<std::string, std::string>{});
  } catch (const json::exception& e) {
    throw Error("volume '" + name + "': its record " + dir + "/volume.json is malformed (" + e.what() + ")");
  }
  return v;
}

/// What one sandbox's reference to a volume says.
struct Ref {
  std::string sandbox, run_root, destination;
  bool read_only = false;
  pid_t pid = 0;
  uint64_t pid_start = 0;
};

std::vector<Ref> read_refs(const std::string& root, const std::string& name) {
  std::vector<Ref> out;
  std::string dir = volume_dir(root, name) + "/refs";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    std::string id = e->d_name;
    if (id.empty() || id[0] == '.') continue;
    try {
      json j = json::parse(fs::read_file(dir + "/" + id));
      Ref r{id, j.value("run_root", ""), j.value("destination", ""), j.value("read_only", false),
            j.value("pid", 0), j.value("pid_start", uint64_t{0})};
      out.push_back(std::move(r));
    } catch (const std::exception&) {
      // Being written (write_file_atomic renames it into place) or damaged: not a reference.
    }
  }
  ::closedir(d);
  return out;
}

/// A reference holds while its sandbox's state dir exists, or while the sbx
/// that is creating the sandbox lives (before the backend made the dir).
bool ref_live(const Ref& r) {
  if (!r.run_root.empty() && fs::exists(runtime::sandbox_dir(r.run_root, r.sandbox))) return true;
  return r.pid > 0 && r.pid_start != 0 && runtime::process_start_time(r.pid) == r.pid_start;
}

/// The sandboxes that use volume `name` (live references; stale ones are removed).
std::vector<std::string> users(const std::string& root, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& r : read_refs(root, name)) {
    if (ref_live(r)) {
      out.push_back(r.sandbox);
    } else {
      ::unlink((volume_dir(root, name) + "/refs/" + r.sandbox).c_str());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> volume_names(const std::string& root) {
  std::vector<std::string> out;
  DIR* d = ::opendir(volumes_dir(root).c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.empty() || n[0] == '.' || !valid_volume_name(n)) continue;
    if (fs::exists(volume_dir(root, n) + "/volume.json")) out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

/// Bytes of the files under `dir` (each inode once per directory walk; no symlink followed).
uint64_t tree_bytes(int dirfd) {
  uint64_t total = 0;
  DIR* d = ::fdopendir(dirfd);
  if (!d) {
    ::close(dirfd);
    return 0;
  }
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(::dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) total += tree_bytes(sub);
    } else {
      total += static_cast<uint64_t>(st.st_size);
    }
  }
  ::closedir(d);
  return total;
}

uint64_t volume_bytes(const std::string& mountpoint) {
  int fd = ::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd < 0 ? 0 : tree_bytes(fd);
}

/// label=KEY[=VALUE], name=SUBSTRING, dangling=true|false, driver=NAME.
bool matches(const Volume& v, const std::vector<std::string>& filters) {
  for (const auto& f : filters) {
    size_t eq = f.find('=');
    std::string key = f.substr(0, eq), value = eq == std::string::npos ? "" : f.substr(eq + 1);
    if (eq == std::string::npos) key = "";
    if (key == "name") {
      if (v.name.find(value) == std::string::npos) return false;
    } else if (key == "driver") {
      if (v.driver != value) return false;
    } else if (key == "dangling") {
      bool want = value == "true" || value == "1";
      if (!want && value != "false" && value != "0")
        throw Error(ErrorKind::InvalidArgument, "invalid volume filter '" + f + "': dangling takes true or false");
      if (v.used_by.empty() != want) return false;
    } else if (key == "label") {
      size_t e2 = value.find('=');
      auto it = v.labels.find(value.substr(0, e2));
      if (it == v.labels.end()) return false;
      if (e2 != std::string::npos && it->second != value.substr(e2 + 1)) return false;
    } else {
      throw Error(ErrorKind::InvalidArgument,
                  "invalid volume filter '" + f + "': use name=, label=KEY[=VALUE], dangling=true|false or driver=");
    }
  }
  return true;
}

// ---- the first-use copy -------------------------------------------------------

/// On-disk id of sandbox id `id` in a volume (engine/volumes.h).
uint32_t disk_id(uint32_t id) {
  return id < runtime::kIdRangeSize - 1 ? runtime::kVolumeIdBase + id : runtime::kVolumeIdBase + 65534;
}

void copy_attrs(int fd, const struct stat& st, const std::string& what) {
  if (::fchown(fd, disk_id(st.st_uid), disk_id(st.st_gid)) < 0) throw_errno("chown " + what);
  if (::fchmod(fd, st.st_mode & 07777) < 0) throw_errno("chmod " + what);
  struct timespec ts[2] = {st.st_atim, st.st_mtim};
  ::futimens(fd, ts);
}

/// Copies the tree under `src` into `dst` (both directory fds): regular
/// files, directories, symlinks and fifos with their modes and times, owners
/// as volume ids; device nodes and sockets are left out. No symlink is followed.
void copy_tree(int src, int dst, const std::string& what) {
  DIR* d = ::fdopendir(::dup(src));
  if (!d) throw_errno("read " + what);
  struct Closer {
    DIR* d;
    ~Closer() { ::closedir(d); }
  } closer{d};
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string path = what + "/" + n;
    struct stat st {};
    if (::fstatat(src, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) throw_errno("stat " + path);
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst, n.c_str(), 0700) < 0) throw_errno("mkdir " + path);
      Fd s(::openat(src, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd t(::openat(dst, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (s.fd < 0 || t.fd < 0) throw_errno("open " + path);
      copy_tree(s.fd, t.fd, path);
      copy_attrs(t.fd, st, path);
    } else if (S_ISREG(st.st_mode)) {
      Fd s(::openat(src, n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      Fd t(::openat(dst, n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (s.fd < 0 || t.fd < 0) throw_errno("open " + path);
      char buf[1 << 16];
      for (;;) {
        ssize_t r = ::read(s.fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw_errno("read " + path);
        if (r == 0) break;
        fs::write_all(t.fd, std::string_view(buf, static_cast<size_t>(r)), path);
      }
      copy_attrs(t.fd, st, path);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t r = ::readlinkat(src, n.c_str(), target.data(), target.size());
      if (r < 0) throw_errno("readlink " + path);
      target.resize(static_cast<size_t>(r));
      if (::symlinkat(target.c_str(), dst, n.c_str()) < 0) throw_errno("symlink " + path);
      if (::fchownat(dst, n.c_str(), disk_id(st.st_uid), disk_id(st.st_gid), AT_SYMLINK_NOFOLLOW) < 0)
        throw_errno("chown " + path);
    } else if (S_ISFIFO(st.st_mode)) {
      if (::mknodat(dst, n.c_str(), S_IFIFO | 0600, 0) < 0) throw_errno("mkfifo " + path);
      Fd t(::openat(dst, n.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
      if (t.fd >= 0) copy_attrs(t.fd, st, path);
    }
  }
}

/// Copies what the image has at `path` (its layers merged) into the empty
/// volume dir `data`, and gives `data` that dir's owner and mode (docker's
/// first-use copy). A path the image lacks copies nothing. Runs on a thread of
/// its own in a private mount namespace (unshare(2) CLONE_NEWNS), where the
/// layers are mounted as a read-only overlay; the mount dies with the thread.
void copy_image_path(const std::vector<std::string>& layers, const std::string& path, const std::string& data,
                     const std::string& scratch) {
  std::exception_ptr failure;
  std::thread t([&] {
    try {
      std::string tree;
      if (layers.size() == 1) {
        tree = layers[0];
      } else {
        if (::unshare(CLONE_NEWNS | CLONE_FS) < 0) throw_errno("unshare a mount namespace for the volume copy");
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) throw_errno("make / private");
        std::string lower;
        for (auto it = layers.rbegin(); it != layers.rend(); ++it) lower += (lower.empty() ? "" : ":") + *it;
        std::string opts = "lowerdir=" + lower;
        if (::mount("overlay", scratch.c_str(), "overlay", MS_RDONLY, opts.c_str()) < 0)
          throw_errno("mount the image's layers at " + scratch);
        tree = scratch;
      }
      // Resolve `path` inside the tree without leaving it: each component opened O_NOFOLLOW.
      Fd cur(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (cur.fd < 0) throw_errno("open " + tree);
      for (const auto& part : split(path, '/')) {
        if (part.empty() || part == ".") continue;
        if (part == "..") return;  // (build_sandbox refuses such paths; nothing to copy)
        int next = ::openat(cur.fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) return;  // not in the image (or not a directory): nothing to copy
        cur = Fd(next);
      }
      struct stat st {};
      if (::fstat(cur.fd, &st) < 0) throw_errno("stat " + path + " in the image");
      Fd dst(::open(data.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dst.fd < 0) throw_errno("open " + data);
      copy_tree(cur.fd, dst.fd, data);
      copy_attrs(dst.fd, st, data);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  t.join();
  if (failure) std::rethrow_exception(failure);
}

bool dir_empty(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw_errno("open the volume " + dir);
  bool empty = true;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

// ---- names ---------------------------------------------------------------------

bool valid_volume_name(const std::string& name) {
  if (name.size() < 2 || name.size() > 255) return false;
  auto ok = [](char c, bool first) {
    return std::isalnum(static_cast<unsigned char>(c)) || (!first && (c == '_' || c == '.' || c == '-'));
  };
  if (!ok(name[0], true)) return false;
  for (size_t i = 1; i < name.size(); ++i)
    if (!ok(name[i], false)) return false;
  return true;
}

void check_volume_name(const std::string& name, const std::string& what) {
  if (!valid_volume_name(name))
    throw Error(ErrorKind::InvalidArgument,
                "invalid " + what + " '" + name +
                    "': a volume name is [a-zA-Z0-9][a-zA-Z0-9_.-]+ (a host path must start with '/')");
}

bool is_volume_source(const std::string& source) {
  return !source.empty() && source[0] != '/' && source[0] != '.' && source[0] != '~';
}

std::string volumes_dir(const std::string& root) { return root + "/volumes"; }

std::string volume_of_source(const std::string& root, const std::string& source) {
  std::string base = volumes_dir(root) + "/";
  if (source.rfind(base, 0) != 0) return "";
  std::string rest = source.substr(base.size());
  size_t slash = rest.find('/');
  if (slash == std::string::npos || rest.substr(slash) != "/_data") return "";
  return rest.substr(0, slash);
}


std::string Volume::json() const {
  nlohmann::json j = {{"Name", name},
                      {"Driver", driver},
                      {"Mountpoint", mountpoint},
                      {"CreatedAt", created},
                      {"Labels", labels},
                      {"Scope", "local"},
                      {"Options", options},
                      {"UsageData", {{"RefCount", used_by.size()}, {"Size", -1}}}};
  return j.dump();
}

// ---- the store ---------------------------------------------------------------

Volume Engine::create_volume(const VolumeCreateRequest& req) {
  if (!req.driver.empty() && req.driver != "local")
    throw Error(ErrorKind::Unsupported, "volume driver '" + req.driver + "' is not supported: sbx has 'local' only");
  std::string name = req.name.empty() ? runtime::new_sandbox_id() : req.name;
  check_volume_name(name);
  (void)local_volume(req.options);  // refused before anything is made
  std::string base = volumes_dir(cfg_.root);
  fs::mkdir_p(cfg_.root, 0755);
  if (::mkdir(base.c_str(), 0700) < 0 && errno != EEXIST) throw_errno("mkdir " + base);
  ::chmod(base.c_str(), 0700);
  std::string dir = volume_dir(cfg_.root, name);
  // An existing volume is returned as it is (docker's create is idempotent).
  if (fs::exists(dir + "/volume.json")) return inspect_volume(name);
  std::string tmp = base + "/.tmp-" + runtime::new_sandbox_id().substr(0, 16);
  try {
    if (::mkdir(tmp.c_str(), 0700) < 0) throw_errno("mkdir " + tmp);
    std::string data = tmp + "/_data";
    if (::mkdir(data.c_str(), 0755) < 0) throw_errno("mkdir " + data);
    if (::chown(data.c_str(), runtime::kVolumeIdBase, runtime::kVolumeIdBase) < 0) throw_errno("chown " + data);
    if (::mkdir((tmp + "/refs").c_str(), 0700) < 0) throw_errno("mkdir " + tmp + "/refs");
    json rec = {{"name", name}, {"driver", "local"}, {"labels", req.labels}, {"created", now_rfc3339()}};
    if (!req.options.empty()) rec["options"] = req.options;
    fs::write_file_atomic(tmp + "/volume.json", rec.dump(), 0600);
    if (::rename(tmp.c_str(), dir.c_str()) < 0) {
      int e = errno;
      runtime::remove_tree(tmp);
      if ((e == EEXIST || e == ENOTEMPTY) && fs::exists(dir + "/volume.json")) return inspect_volume(name);
      throw_errno("rename " + tmp + " to " + dir, e);
    }
  } catch (...) {
    runtime::remove_tree(tmp);
    throw;
  }
  return inspect_volume(name);
}

std::vector<Volume> Engine::list_volumes(const std::vector<std::string>& filters) {
  for (const auto& f : filters) {  // a bad filter is an error even with no volume
    std::string key = f.substr(0, f.find('='));
    if (f.find('=') == std::string::npos || (key != "name" && key != "label" && key != "dangling" && key != "driver"))
      throw Error(ErrorKind::InvalidArgument,
                  "invalid volume filter '" + f + "': use name=, label=KEY[=VALUE], dangling=true|false or driver=");
  }
  std::vector<Volume> out;
  for (const auto& n : volume_names(cfg_.root)) {
    try {
      Volume v = read_volume(cfg_.root, n);
      v.used_by = users(cfg_.root, n);
      if (matches(v, filters)) out.push_back(std::move(v));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::InvalidArgument) throw;
      // removed meanwhile
    }
  }
  return out;
}

Volume Engine::inspect_volume(const std::string& name) {
  if (!valid_volume_name(name) || !fs::exists(volume_dir(cfg_.root, name) + "/volume.json"))
    throw Error(ErrorKind::NotFound, "no such volume '" + name + "'; see 'sbx volume ls'");
  Volume v = read_volume(cfg_.root, name);
  v.used_by = users(cfg_.root, name);
  return v;
}

void Engine::remove_volume(const std::string& name, bool force) {
  if (!valid_volume_name(name) || !fs::exists(volume_dir(cfg_.root, name) + "/volume.json")) {
    if (force) return;
    throw Error(ErrorKind::NotFound, "no such volume '" + name + "'; see 'sbx volume ls'");
  }
  auto used = users(cfg_.root, name);
  if (!used.empty()) {
    std::string ids;
    for (const auto& u : used) ids += (ids.empty() ? "" : ", ") + u.substr(0, 12);
    throw Error(ErrorKind::Conflict, "volume '" + name + "' is in use by sandbox " + ids +
                                         ": remove the sandbox first ('sbx rm -f " + used[0].substr(0, 12) + "')");
  }
  // Renamed out of the listing first: a failed removal leaves no half volume behind its name.
  std::string gone = volumes_dir(cfg_.root) + "/.rm-" + name + "-" + runtime::new_sandbox_id().substr(0, 8);
  std::string dir = volume_dir(cfg_.root, name);
  if (::rename(dir.c_str(), gone.c_str()) < 0) {
    if (errno == ENOENT && !force) throw Error(ErrorKind::NotFound, "no such volume '" + name + "'");
    if (errno == ENOENT) return;
    throw_errno("rename " + dir);
  }
  if (int e = runtime::remove_tree(gone)) throw_errno("remove " + gone, e);
}

VolumePruneResult Engine::prune_volumes(const std::vector<std::string>& filters) {
  VolumePruneResult out;
  for (const auto& v : list_volumes(filters)) {
    if (!v.used_by.empty()) continue;
    uint64_t bytes = volume_bytes(v.mountpoint);
    try {
      remove_volume(v.name, false);
      out.deleted.push_back(v.name);
      out.reclaimed += bytes;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Conflict && !not_found(e.kind())) throw;  // taken meanwhile, or gone
    }
  }
  return out;
}

std::vector<VolumeMount> Engine::sandbox_volumes(const std::string& id) {
  std::vector<VolumeMount> out;
  for (const auto& n : volume_names(cfg_.root))
    for (const auto& r : read_refs(cfg_.root, n))
      if (r.sandbox == id) out.push_back({n, volume_dir(cfg_.root, n) + "/_data", r.destination, r.read_only});
  return out;
}

uint64_t Engine::volumes_size(size_t* count, size_t* unused, uint64_t* reclaimable) {
  uint64_t total = 0;
  for (const auto& v : list_volumes()) {
    uint64_t b = volume_bytes(v.mountpoint);
    total += b;
    if (count) ++*count;
    if (v.used_by.empty()) {
      if (unused) ++*unused;
      if (reclaimable) *reclaimable += b;
    }
  }
  return total;
}

std::vector<std::string> image_volumes(const std::string& root, const std::string& image_id) {
  std::vector<std::string> out;
  if (image_id.empty() || image_id.find('/') != std::string::npos) return out;
  std::string blob = root + "/blobs/sha256/" + image_id;
  if (!fs::exists(blob)) return out;
  try {
    json c = json::parse(fs::read_file(blob));
    auto cfg = c.find("config");
    if (cfg == c.end() || !cfg->is_object()) return out;
    auto v = cfg->find("Volumes");
    if (v == cfg->end() || !v->is_object()) return out;
    for (const auto& [path, _] : v->items()) {
      std::string p = path;
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      if (!p.empty() && p[0] == '/') out.push_back(p);
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

namespace {

/// The anonymous volumes sandbox `id` (full id) references. Reads every
/// volume's record: for a sandbox whose spec is lost only (Engine::remove
/// reads the spec's own volumes).
std::vector<std::string> anonymous_volumes(Engine& engine, const std::string& id) {
  std::vector<std::string> out;
  const std::string& root = engine.config().root;
  for (const auto& n : volume_names(root)) {
    try {
      if (!read_volume(root, n).labels.count(kAnonymousVolumeLabel)) continue;
    } catch (const Error&) {
      continue;
    }
    for (const auto& r : read_refs(root, n))
      if (r.sandbox == id) out.push_back(n);
  }
  return out;
}

}  // namespace

std::optional<std::vector<std::string>> carried_image_volumes(const SandboxSpec& spec) {
  auto it = spec.annotations.find(kImageVolumesAnnotation);
  if (it == spec.annotations.end()) return std::nullopt;
  try {
    auto paths = json::parse(it->second).get<std::vector<std::string>>();
    if (std::all_of(paths.begin(), paths.end(), [](const std::string& p) { return !p.empty() && p[0] == '/'; }))
      return paths;
  } catch (const json::exception&) {
  }
  return std::nullopt;  // malformed: the image is read instead
}

std::vector<std::string> spec_image_volumes(const std::string& root, SandboxSpec& spec) {
  if (auto carried = carried_image_volumes(spec)) return *carried;
  auto paths = image_volumes(root, spec.image_id);
  spec.annotations[kImageVolumesAnnotation] = json(paths).dump();
  return paths;
}

std::vector<std::string> spec_anonymous_volumes(const std::string& root, const std::vector<spec::Mount>& mounts) {
  std::vector<std::string> out;
  for (const auto& m : mounts) {
    std::string n = volume_of_source(root, m.source);
    if (n.empty() || std::find(out.begin(), out.end(), n) != out.end()) continue;
    try {
      if (read_volume(root, n).labels.count(kAnonymousVolumeLabel)) out.push_back(n);
    } catch (const Error&) {
      // gone or damaged: nothing to remove through it
    }
  }
  return out;
}

std::vector<std::string> detach_every_volume(Engine& engine, const std::string& id) noexcept {
  std::vector<std::string> anon;
  const std::string& root = engine.config().root;
  try {
    anon = anonymous_volumes(engine, id);
    for (const auto& n : volume_names(root)) ::unlink((volume_dir(root, n) + "/refs/" + id).c_str());
  } catch (...) {
  }
  return anon;
}

std::vector<std::string> remove_unused_volumes(Engine& engine, const std::vector<std::string>& names) {
  std::vector<std::string> removed;
  for (const auto& n : names) {
    if (!users(engine.config().root, n).empty()) continue;
    try {
      engine.remove_volume(n, false);
      removed.push_back(n);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Conflict && !not_found(e.kind())) throw;
    }
  }
  return removed;
}

namespace {

/// add_anonymous_volumes's work; the names it made are in `made` also when it throws.
void add_anonymous_volumes_to(Engine& engine, SandboxSpec& spec, std::vector<std::string>& made) {
  const std::string& root = engine.config().root;
  // --mount type=volume without a source: an anonymous volume of its own.
  for (auto& m : spec.mounts) {
    if (m.type != kVolumeMountType || !m.source.empty()) continue;
    m.source = engine.create_volume({runtime::new_sandbox_id(), {{kAnonymousVolumeLabel, ""}}, "local", {}}).name;
    made.push_back(m.source);
  }
  auto paths = spec_image_volumes(root, spec);
  if (paths.empty()) return;
  // A sandbox of this id made before (a Docker container started again)
  // keeps its own: read from its previous spec, not from every volume.
  std::map<std::string, std::string> had;  // destination → name
  try {
    if (fs::exists(runtime::sandbox_dir(engine.config().run_root, spec.id) + "/config.json")) {
      auto old = runtime::open_sandbox(engine.config().run_root, spec.id).spec().mounts;
      std::vector<std::string> anon = spec_anonymous_volumes(root, old);
      for (const auto& m : old) {
        std::string n = volume_of_source(root, m.source);
        if (std::find(anon.begin(), anon.end(), n) != anon.end()) had[m.destination] = n;
      }
    }
  } catch (const Error&) {
    // no readable previous spec: new volumes
  }
  for (const auto& p : paths) {
    bool covered = std::any_of(spec.mounts.begin(), spec.mounts.end(), [&](const spec::Mount& m) {
      std::string d = m.destination;
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      return d == p;
    });
    if (covered) continue;
    std::string name;
    if (auto it = had.find(p); it != had.end() && fs::exists(volume_dir(root, it->second) + "/volume.json")) {
      name = it->second;
    } else {
      name = engine.create_volume({runtime::new_sandbox_id(), {{kAnonymousVolumeLabel, ""}}, "local", {}}).name;
      made.push_back(name);
    }
    spec.mounts.push_back({p, kVolumeMountType, name, {}});
  }
}

}  // namespace

std::vector<std::string> add_anonymous_volumes(Engine& engine, SandboxSpec& spec) {
  std::vector<std::string> made;
  try {
    add_anonymous_volumes_to(engine, spec, made);
  } catch (...) {
    for (const auto& n : made) {
      try {
        engine.remove_volume(n, true);
      } catch (const Error&) {
      }
    }
    throw;
  }
  return made;
}


std::vector<std::string> Engine::attach_volumes(SandboxSpec& spec) {
  std::vector<std::string> attached;
  std::vector<std::string> anonymous;
  try {
    anonymous = add_anonymous_volumes(*this, spec);
    for (auto& m : spec.mounts) {
      if (m.type != kVolumeMountType) continue;
      Volume v = create_volume({m.source, {}, "local", {}});  // docker: an unknown name is created
      bool ro = std::find(m.options.begin(), m.options.end(), "ro") != m.options.end();
      bool nocopy = std::find(m.options.begin(), m.options.end(), "nocopy") != m.options.end();
      std::string dir = volume_dir(cfg_.root, v.name);
      json ref = {{"run_root", cfg_.run_root},
                  {"pid", ::getpid()},
                  {"pid_start", runtime::process_start_time(::getpid())},
                  {"destination", m.destination},
                  {"read_only", ro}};
      fs::mkdir_p(dir + "/refs", 0700);
      fs::write_file_atomic(dir + "/refs/" + spec.id, ref.dump(), 0600);
      attached.push_back(v.name);
      const LocalVolume local = local_volume(v.options);
      if (local.kind == LocalVolume::Kind::Tmpfs) {
        // A tmpfs of the volume's size for this sandbox (its source names the
        // volume's _data, so the sandbox's spec says which volume it is).
        m.type = "tmpfs";
        m.source = v.mountpoint;
        m.options = {"nosuid", "nodev"};
        for (const auto& o : local.tmpfs) m.options.push_back(o);
        if (ro) m.options.push_back("ro");
        continue;
      }
      if (local.kind == LocalVolume::Kind::Bind) {
        // The host directory itself, as -v /HOST:/PATH binds it (docker
        // mounts it on the volume's _data first; the sandbox sees the same).
        // Nothing of the image is copied into it: it is the host's.
        m = host_dir_bind(m.destination, local.device, ro || local.read_only,
                          "volume '" + v.name + "': its device " + local.device,
                          "make that host directory, or remove the volume and create it with another device=");
        continue;
      }
      if (!nocopy && !spec.layer_dirs.empty() && dir_empty(v.mountpoint)) {
        std::string scratch = volumes_dir(cfg_.root) + "/.copy-" + runtime::new_sandbox_id().substr(0, 16);
        if (::mkdir(scratch.c_str(), 0700) < 0) throw_errno("mkdir " + scratch);
        try {
          copy_image_path(spec.layer_dirs, m.destination, v.mountpoint, scratch);
        } catch (const Error& e) {
          ::rmdir(scratch.c_str());
          // A half copy must not pass for the image's files next time: the volume is emptied.
          runtime::remove_tree(v.mountpoint);
          if (::mkdir(v.mountpoint.c_str(), 0755) == 0)
            (void)!::chown(v.mountpoint.c_str(), runtime::kVolumeIdBase, runtime::kVolumeIdBase);
          throw Error(e, "volume '" + v.name + "': copying the image's " + m.destination + " into it failed: " +
                             e.what());
        }
        ::rmdir(scratch.c_str());
      }
      m.type = "bind";
      m.source = v.mountpoint;
      m.options = {"rbind"};
      if (ro) m.options.push_back("ro");
    }
  } catch (...) {
    detach_volumes(spec.id, attached);
    for (const auto& n : anonymous) {
      try {
        remove_volume(n, true);
      } catch (const Error&) {
      }
    }
    throw;
  }
  return attached;
}

std::vector<std::string> hold_volumes(Engine& engine, const std::string& id, const std::vector<spec::Mount>& mounts) {
  std::vector<std::string> held;
  const std::string& root = engine.config().root;
  try {
    for (const auto& m : mounts) {
      if (m.type != kVolumeMountType) continue;
      Volume v = engine.create_volume({m.source, {}, "local", {}});
      bool ro = std::find(m.options.begin(), m.options.end(), "ro") != m.options.end();
      // No run root: the reference holds while this process lives (ref_live).
      json ref = {{"run_root", ""},
                  {"pid", ::getpid()},
                  {"pid_start", runtime::process_start_time(::getpid())},
                  {"destination", m.destination},
                  {"read_only", ro}};
      std::string dir = volume_dir(root, v.name);
      fs::mkdir_p(dir + "/refs", 0700);
      fs::write_file_atomic(dir + "/refs/" + id, ref.dump(), 0600);
      held.push_back(v.name);
    }
  } catch (...) {
    release_volumes(engine, id, held);
    throw;
  }
  return held;
}

void release_volumes(Engine& engine, const std::string& id, const std::vector<std::string>& names) noexcept {
  for (const auto& n : names) ::unlink((volume_dir(engine.config().root, n) + "/refs/" + id).c_str());
}

std::vector<std::string> gc_volumes(const std::string& root) {
  std::vector<std::string> removed;
  std::string base = volumes_dir(root);
  DIR* d = ::opendir(base.c_str());
  if (!d) return removed;
  std::vector<std::string> names;
  while (auto* e = ::readdir(d)) names.push_back(e->d_name);
  ::closedir(d);
  time_t now = ::time(nullptr);
  for (const auto& n : names) {
    std::string path = base + "/" + n;
    struct stat st {};
    if (::lstat(path.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
    // A removal that was cut short goes on; a create or copy scratch dir is
    // left alone for an hour (a create may be using it right now).
    bool stale = n.rfind(".rm-", 0) == 0 ||
                 ((n.rfind(".tmp-", 0) == 0 || n.rfind(".copy-", 0) == 0) && now - st.st_mtime > 3600);
    if (stale && runtime::remove_tree(path) == 0) removed.push_back(path);
  }
  for (const auto& n : volume_names(root)) users(root, n);  // drops stale references
  return removed;
}

void Engine::detach_volumes(const std::string& id, const std::vector<std::string>& names) noexcept {
  for (const auto& n : names) ::unlink((volume_dir(cfg_.root, n) + "/refs/" + id).c_str());
}

std::vector<std::string> Engine::detach_spec_volumes(const std::string& id,
                                                     const std::vector<spec::Mount>& mounts) noexcept {
  std::vector<std::string> anon;
  try {
    anon = spec_anonymous_volumes(cfg_.root, mounts);
    for (const auto& m : mounts) {
      std::string n = volume_of_source(cfg_.root, m.source);
      if (!n.empty()) ::unlink((volume_dir(cfg_.root, n) + "/refs/" + id).c_str());
    }
  } catch (...) {
  }
  return anon;
}

}  // namespace sbx::engine
