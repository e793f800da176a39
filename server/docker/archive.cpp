// /containers/{id}/archive (GET, PUT, HEAD) over the engine's copies
// (Engine::copy_in / copy_out: `sbx cp`, whose path rules apply — paths in
// the sandbox are resolved by the kernel inside its root, symlinks are never
// followed out of it, set-id bits never reach the host).
//
// A tar a client sends is unpacked into a private temp dir on the host first
// (libarchive with its secure-extract flags: no "..", no absolute names, no
// writing through symlinks; only regular files, directories and symlinks),
// then copied in with copy_in. A tar a client receives is made from a
// copy_out into a temp dir and streamed as it is made (common/tar_stream.h:
// never whole in memory; sparse files as sparse entries, holes kept). The
// uploaded tar arrives on disk (the server core spools it, bounded:
// Api::body_rule); temp dirs live under ROOT/.serve-tmp (server/temp_dir.h)
// and are removed when the request ends. Either way the files staged there
// hold at most kMaxCopyStage bytes of data (holes stay holes and are free).
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/tar_stream.h"
#include "runtime/state.h"
#include "server/docker/api.h"
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
std::string path_stat_header(const runtime::PathStat& st, const std::string& name) {
  uint32_t mode = st.mode & 0777;
  if (S_ISDIR(st.mode)) mode |= 1u << 31;
  if (S_ISLNK(st.mode)) mode |= 1u << 27;
  if (S_ISFIFO(st.mode)) mode |= 1u << 25;
  if (S_ISSOCK(st.mode)) mode |= 1u << 24;
  if (S_ISCHR(st.mode)) mode |= (1u << 26) | (1u << 21);
  if (S_ISBLK(st.mode)) mode |= 1u << 26;
  char mtime[64];
  struct tm tm {};
  time_t t = static_cast<time_t>(st.mtime_s);
  ::gmtime_r(&t, &tm);
  std::strftime(mtime, sizeof mtime, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json j = {{"name", name}, {"size", st.size}, {"mode", mode}, {"mtime", mtime}, {"linkTarget", st.link_target}};
  return base64(j.dump());
}

/// The header for a copy staged on the host at `host_path`.
std::string path_stat_header(const std::string& host_path, const std::string& name) {
  struct stat st {};
  if (::lstat(host_path.c_str(), &st) < 0) throw_errno("stat " + host_path);
  runtime::PathStat ps;
  ps.mode = st.st_mode;
  ps.size = static_cast<uint64_t>(st.st_size);
  ps.mtime_s = st.st_mtime;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(host_path.c_str(), buf, sizeof buf);
    if (n > 0) ps.link_target.assign(buf, static_cast<size_t>(n));
  }
  return path_stat_header(ps, name);
}

/// Unpacks the tar in the file `tar` into `dir` with libarchive's secure
/// flags; only regular files, directories and symlinks; sparse entries and
/// runs of zeros become holes. Throws HttpError 400 on a malformed or hostile
/// archive, 507 when its files hold more than kMaxCopyStage bytes of data.
void untar(const std::string& tar, const std::string& dir) {
  struct archive* a = ::archive_read_new();
  ::archive_read_support_format_tar(a);
  ::archive_read_support_filter_all(a);
  struct archive* w = ::archive_write_disk_new();
  // (Names are checked below and then made absolute under `dir`, so not
  // ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS.)
  ::archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SPARSE);
  std::string err;
  int status = 400;
  uint64_t data = 0;  // bytes written that are not holes
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
    while (err.empty() && (r = ::archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK) {
      // A block of zeros becomes a hole (ARCHIVE_EXTRACT_SPARSE): only the
      // rest counts against the bound.
      const char* p = static_cast<const char*>(buf);
      if (std::find_if(p, p + size, [](char ch) { return ch != 0; }) != p + size) data += size;
      if (data > kMaxCopyStage) {
        err = "its files hold more than " + std::to_string(kMaxCopyStage) + " bytes of data (the server's bound)";
        status = 507;
        break;
      }
      if (::archive_write_data_block(w, buf, size, off) != ARCHIVE_OK) break;
    }
    ::archive_write_finish_entry(w);
  }
  ::archive_write_free(w);
  ::archive_read_free(a);
  if (!err.empty()) throw HttpError{status, "archive: " + err};
}

}  // namespace

void Api::container_archive(Connection& c, const Request& r, const std::string& ref) {
  std::string id = resolve_container(ref);
  std::string path = r.param("path");
  if (path.empty() || path[0] != '/') throw HttpError{400, "path must be an absolute path in the container"};
  std::string name = path;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  name = name == "/" ? "." : name.substr(name.rfind('/') + 1);
  if (r.method == "HEAD") {
    // The stat of the path in the sandbox, nothing copied (the docker CLI
    // sends a HEAD before every copy out: a stage here would copy a whole
    // tree, or a huge file, for its size alone). A backend without such a
    // stat gets the staged copy.
    try {
      runtime::PathStat st = engine_.stat_path(id, path);
      return (void)c.send(200, "", "application/x-tar", {{"X-Docker-Container-Path-Stat", path_stat_header(st, name)}});
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Unsupported)
        throw HttpError{404, std::string("Could not find the file ") + path + " in container " + ref + ": " + e.what()};
    }
  }
  TempDir tmp(engine_.config().root);
  if (r.method == "PUT") {
    // The body is on disk (body_rule: spooled), unpacked beside it.
    untar(r.body_file, tmp.path() + "/in");
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path() + "/in", ec))
      engine_.copy_in(id, e.path().string(), path);
    return (void)c.send(200, "");
  }
  // GET (and HEAD on a backend without stat_path): the path copied out
  // (copy_out's checks), then stat'ed / tarred.
  std::string out = tmp.path() + "/out";
  try {
    engine_.copy_out(id, path, out, kMaxCopyStage);
  } catch (const Error& e) {
    if (e.err() == EFBIG) throw HttpError{507, std::string("copy ") + path + " out of container " + ref + ": " + e.what()};
    throw HttpError{404, std::string("Could not find the file ") + path + " in container " + ref + ": " + e.what()};
  }
  std::string stat = path_stat_header(out, name);
  if (r.method == "HEAD")  // the stat header alone (the connection sends no body on HEAD)
    return (void)c.send(200, "", "application/x-tar", {{"X-Docker-Container-Path-Stat", stat}});
  // Chunked, as it is made: a client that leaves stops it.
  if (!c.begin_chunks(200, "application/x-tar", {{"X-Docker-Container-Path-Stat", stat}})) return;
  bool done = false;
  try {
    done = write_tar(out, name, [&](std::string_view b) { return c.chunk(b); });
  } catch (const Error& e) {
    log::warn("archive of " + path + " in container " + ref + ": " + e.what());
  }
  // Cut short (the client left, or a file could not be read after the head
  // went out): the connection ends without the last chunk, so the client
  // sees a truncated response, never a complete but wrong tar.
  if (!done || !c.end_chunks()) c.set_close();
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
