// /containers/{id}/archive (GET, PUT, HEAD) over the engine's copies
// (Engine::copy_in / copy_out: `sbx cp`, whose path rules apply — paths in
// the sandbox are resolved by the kernel inside its root, symlinks are never
// followed out of it, set-id bits never reach the host).
//
// A tar a client sends is unpacked into a private temp dir on the host first
// (libarchive with its secure-extract flags: no "..", no absolute names, no
// writing through symlinks; only regular files, directories and symlinks),
// then copied in with copy_in. A tar a client receives is made from a
// copy_out into a temp dir. The uploaded tar arrives on disk (the server core
// spools it, bounded: Api::body_rule); temp dirs live under ROOT/.serve-tmp
// (server/temp_dir.h) and are removed when the request ends.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/state.h"
#include "server/api.h"
#include "server/temp_dir.h"

namespace sbx::server {

using nlohmann::json;

namespace {

std::string base64(std::string_view in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += t[v >> 18];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += t[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += t[v >> 18];
    out += t[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += t[v >> 18];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

/// Docker's X-Docker-Container-Path-Stat: base64 of {name, size, mode (Go's
/// os.FileMode: type bits high), mtime, linkTarget}.
std::string path_stat_header(const std::string& host_path, const std::string& name) {
  struct stat st {};
  if (::lstat(host_path.c_str(), &st) < 0) throw_errno("stat " + host_path);
  uint32_t mode = st.st_mode & 0777;
  if (S_ISDIR(st.st_mode)) mode |= 1u << 31;
  if (S_ISLNK(st.st_mode)) mode |= 1u << 27;
  std::string link;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(host_path.c_str(), buf, sizeof buf);
    if (n > 0) link.assign(buf, static_cast<size_t>(n));
  }
  char mtime[64];
  struct tm tm {};
  ::gmtime_r(&st.st_mtime, &tm);
  std::strftime(mtime, sizeof mtime, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json j = {{"name", name}, {"size", st.st_size}, {"mode", mode}, {"mtime", mtime}, {"linkTarget", link}};
  return base64(j.dump());
}

/// Unpacks the tar in the file `tar` into `dir` with libarchive's secure
/// flags; only regular files, directories and symlinks. Throws HttpError 400
/// on a malformed or hostile archive.
void untar(const std::string& tar, const std::string& dir) {
  struct archive* a = ::archive_read_new();
  ::archive_read_support_format_tar(a);
  ::archive_read_support_filter_all(a);
  struct archive* w = ::archive_write_disk_new();
  // (Names are checked below and then made absolute under `dir`, so not
  // ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS.)
  ::archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  std::string err;
  if (::archive_read_open_filename(a, tar.c_str(), 1 << 20) != ARCHIVE_OK) err = ::archive_error_string(a);
  struct archive_entry* e;
  while (err.empty()) {
    int r = ::archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) {
      err = ::archive_error_string(a);
      break;
    }
    mode_t type = ::archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) continue;  // no devices, fifos
    std::string name = ::archive_entry_pathname(e);
    if (name.empty() || name[0] == '/' || name == ".." || name.rfind("../", 0) == 0 ||
        name.find("/../") != std::string::npos || name.ends_with("/..")) {
      err = "refused entry '" + name + "': absolute or '..' path";
      break;
    }
    while (name.rfind("./", 0) == 0) name.erase(0, 2);
    if (name.empty() || name == ".") continue;
    if (::archive_entry_hardlink(e)) continue;  // hard links could point anywhere: skipped
    ::archive_entry_set_pathname(e, (dir + "/" + name).c_str());
    ::archive_entry_set_perm(e, ::archive_entry_perm(e) & 0777);  // no set-id bits through the API
    if (::archive_write_header(w, e) != ARCHIVE_OK) {
      err = std::string("refused entry '") + name + "': " + ::archive_error_string(w);
      break;
    }
    const void* buf;
    size_t size;
    la_int64_t off;
    while ((r = ::archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK)
      if (::archive_write_data_block(w, buf, size, off) != ARCHIVE_OK) break;
    ::archive_write_finish_entry(w);
  }
  ::archive_write_free(w);
  ::archive_read_free(a);
  if (!err.empty()) throw HttpError{400, "archive: " + err};
}

/// A tar of `host_path` whose top entry is called `name`.
std::string tar_of(const std::string& host_path, const std::string& name) {
  std::string out;
  struct archive* a = ::archive_write_new();
  ::archive_write_set_format_pax_restricted(a);
  ::archive_write_open(
      a, &out, nullptr,
      [](struct archive*, void* u, const void* b, size_t n) -> la_ssize_t {
        static_cast<std::string*>(u)->append(static_cast<const char*>(b), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  std::function<void(const std::string&, const std::string&)> add = [&](const std::string& p, const std::string& n) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) < 0) throw_errno("stat " + p);
    struct archive_entry* e = ::archive_entry_new();
    ::archive_entry_copy_stat(e, &st);
    ::archive_entry_set_pathname(e, n.c_str());
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t k = ::readlink(p.c_str(), buf, sizeof buf - 1);
      buf[k > 0 ? k : 0] = 0;
      ::archive_entry_set_symlink(e, buf);
    }
    ::archive_write_header(a, e);
    ::archive_entry_free(e);
    if (S_ISREG(st.st_mode)) {
      std::string data = fs::read_file(p);
      ::archive_write_data(a, data.data(), data.size());
    } else if (S_ISDIR(st.st_mode)) {
      for (const auto& d : std::filesystem::directory_iterator(p))
        add(d.path().string(), n + "/" + d.path().filename().string());
    }
  };
  add(host_path, name);
  ::archive_write_close(a);
  ::archive_write_free(a);
  return out;
}

}  // namespace

void Api::container_archive(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  std::string path = r.param("path");
  if (path.empty() || path[0] != '/') throw HttpError{400, "path must be an absolute path in the container"};
  TempDir tmp(engine_.config().root);
  if (r.method == "PUT") {
    // The body is on disk (body_rule: spooled), unpacked beside it.
    untar(r.body_file, tmp.path() + "/in");
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path() + "/in", ec))
      engine_.copy_in(id, e.path().string(), path);
    return (void)c.send(200, "");
  }
  // GET, HEAD: the path copied out (copy_out's checks), then stat'ed / tarred.
  std::string name = path;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  name = name == "/" ? "." : name.substr(name.rfind('/') + 1);
  std::string out = tmp.path() + "/out";
  try {
    engine_.copy_out(id, path, out);
  } catch (const Error& e) {
    throw HttpError{404, std::string("Could not find the file ") + path + " in container " + ref + ": " + e.what()};
  }
  std::string stat = path_stat_header(out, name);
  if (r.method == "HEAD") {
    std::string head = "HTTP/1.1 200 OK\r\nApi-Version: 1.44\r\nContent-Type: application/x-tar\r\n"
                       "X-Docker-Container-Path-Stat: " + stat + "\r\nContent-Length: 0\r\n\r\n";
    return (void)c.write_raw(head);
  }
  c.send(200, tar_of(out, name), "application/x-tar", {{"X-Docker-Container-Path-Stat", stat}});
}

void Api::commit(Connection& c, const Request& r) {
  std::string ref = r.param("container");
  if (ref.empty()) throw HttpError{400, "container is required"};
  std::string id = resolve_container(ref);
  std::string repo = r.param("repo"), tag = r.param("tag");
  engine::FsSnapshotRequest req;
  req.sandbox = id;
  if (!repo.empty()) req.name = repo + (tag.empty() ? "" : ":" + tag);
  auto res = engine_.snapshot_fs(req);
  // The snapshot froze and thawed the sandbox: a paused container stays paused.
  if (auto ctr = record(id)) {
    bool paused;
    {
      std::lock_guard lk(mu_);
      paused = ctr->paused;
    }
    if (paused) engine_.pause(id);
  }
  c.send(201, json{{"Id", "sha256:" + res.image.id}}.dump());
}

}  // namespace sbx::server
