// /sbx/v1 files (server/v1/sbx_v1.h, docs/api.md "Files").
//
// Reads and writes go through the engine's copies (Engine::copy_out /
// copy_in: `sbx cp`'s rules: the path is resolved by the kernel inside the
// sandbox's root, symlinks never lead out, set-id bits never reach the
// host), by way of a private temp dir on the host (ROOT/.serve-tmp,
// server/temp_dir.h), so a 100 MB file is streamed to and from disk, never
// held in memory.
//
// list, stat, exists, remove and mkdir run the image's own stat/find/rm/mkdir
// in the sandbox (as the sandbox's user, with the path as an argument, never
// in a shell string): what a process in the sandbox may do, nothing more.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/log.h"
#include "runtime/state.h"
#include "server/error_status.h"
#include "server/v1/sbx_v1.h"
#include "server/temp_dir.h"

namespace sbx::server {

using nlohmann::json;

namespace {

std::string checked_path(const std::string& p) {
  if (p.empty() || p[0] != '/') throw V1Error{400, "InvalidArgument", "path must be absolute, not '" + p + "'"};
  if (p.find('\0') != std::string::npos) throw V1Error{400, "InvalidArgument", "path has a NUL byte"};
  return p;
}

/// "/a/b/c" → {"/a/b", "c"}; refuses "/", "." and ".." as the last part.
std::pair<std::string, std::string> split(const std::string& p) {
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  auto slash = s.rfind('/');
  std::string dir = slash == 0 ? "/" : s.substr(0, slash), base = s.substr(slash + 1);
  if (base.empty() || base == "." || base == "..")
    throw V1Error{400, "InvalidArgument", "path '" + p + "' names no file"};
  return {dir, base};
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

V1Error file_error(const Error& e, const std::string& path) {
  if (e.err() == EFBIG) return {507, "TooLarge", e.what()};  // past the staging bound
  V1Status s = v1_status(e);
  if (s.kind == ErrorKind::FileNotFound) return {404, "FileNotFound", "no such file in the sandbox: " + path};
  if (e.err() == EISDIR) return {400, "IsADirectory", path + " is a directory"};
  return classify(e);
}

}  // namespace

void SbxV1::file_read(Connection& c, const Request& r, const std::string& id) {
  std::string path = checked_path(r.param("path"));
  TempDir tmp(engine_.config().root);
  std::string host = tmp.path() + "/f";
  try {
    engine_.copy_out(id, path, host, kMaxCopyStage);
  } catch (const Error& e) {
    // Staging stopped at its bound (gVisor's copy streams holes as data): the
    // file is over what a read answers, the same 413 as a size over it.
    if (e.err() == EFBIG) throw V1Error{413, "TooLarge", file_read_too_large(path, UINT64_MAX)};
    throw file_error(e, path);
  }
  struct stat st {};
  if (::lstat(host.c_str(), &st) < 0) throw V1Error{404, "FileNotFound", "no such file in the sandbox: " + path};
  if (S_ISDIR(st.st_mode)) throw V1Error{400, "IsADirectory", path + " is a directory (files.list reads it)"};
  if (!S_ISREG(st.st_mode)) throw V1Error{400, "InvalidArgument", path + " is not a regular file"};
  if (static_cast<uint64_t>(st.st_size) > kMaxFileRead)
    throw V1Error{413, "TooLarge", file_read_too_large(path, static_cast<uint64_t>(st.st_size))};
  Fd f(::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (f.fd < 0) throw_errno("open " + host);
  // Content-Length from the copy; the body read and sent 1 MiB at a time.
  if (!c.begin_body(200, "application/octet-stream", static_cast<uint64_t>(st.st_size))) return;
  std::string buf(1 << 20, '\0');
  for (off_t left = st.st_size; left > 0;) {
    ssize_t k = ::read(f.fd, buf.data(), std::min<off_t>(left, static_cast<off_t>(buf.size())));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      c.set_close();  // the length promised cannot be kept: the client sees a short body
      return;
    }
    if (!c.write_raw(std::string_view(buf.data(), static_cast<size_t>(k)))) {
      c.set_close();
      return;
    }
    left -= k;
  }
}

void SbxV1::file_write(Connection& c, const Request& r, const std::string& id) {
  std::string path = checked_path(r.param("path"));
  auto [dir, base] = split(path);
  bool append = r.flag("append", false);
  mode_t mode = 0644;
  if (std::string m = r.param("mode"); !m.empty()) {
    try {
      mode = static_cast<mode_t>(std::stoul(m, nullptr, 8)) & 07777;
    } catch (...) {
      throw V1Error{400, "InvalidArgument", "mode must be octal, not '" + m + "'"};
    }
  }
  bool upgraded = r.header("upgrade").rfind("sbx-stream", 0) == 0;
  if (engine_.inspect(id).status != "running")
    throw V1Error{409, "Conflict", "sandbox " + id.substr(0, 12) + " is not running"};
  TempDir tmp(engine_.config().root);
  std::string host = tmp.path() + "/" + base;
  if (append) {
    try {
      engine_.copy_out(id, path, host, kMaxCopyStage);
    } catch (const Error& e) {
      V1Error ve = file_error(e, path);
      if (ve.kind != "FileNotFound") throw ve;  // absent: append makes it
    }
    struct stat st {};
    if (::lstat(host.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw V1Error{400, "IsADirectory", path + " is not a regular file"};
  }
  Fd f(::open(host.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, mode));
  if (f.fd < 0) throw_errno("open " + host);
  if (!append) ::fchmod(f.fd, mode);
  uint64_t bytes = 0;
  if (!upgraded) {
    if (!write_all(f.fd, r.body.data(), r.body.size())) throw_errno("write " + host);
    bytes = r.body.size();
  } else {
    // The upload: raw bytes after the 101 until the client shuts its write
    // side (bounded only by the disk: it is streamed, never held).
    if (!c.hijack(r, "application/vnd.sbx.upload")) return;
    if (!r.leftover.empty()) {
      if (!write_all(f.fd, r.leftover.data(), r.leftover.size())) throw_errno("write " + host);
      bytes += r.leftover.size();
    }
    std::string buf(1 << 20, '\0');
    for (;;) {
      ssize_t k = ::read(c.fd(), buf.data(), buf.size());
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return;  // the client is gone: nothing is copied in
      if (k == 0) break;
      if (!write_all(f.fd, buf.data(), static_cast<size_t>(k))) {
        c.write_raw(json{{"message", "write " + host + ": " + std::strerror(errno)}, {"kind", "Internal"}}.dump());
        return;
      }
      bytes += static_cast<uint64_t>(k);
    }
  }
  f = Fd();
  json res;
  try {
    engine_.copy_in(id, host, dir);
    res = {{"path", path}, {"bytes", bytes}};
  } catch (const Error& e) {
    V1Error ve = file_error(e, dir);
    if (ve.kind == "FileNotFound") ve.message = "no such directory in the sandbox: " + dir;
    if (!upgraded) throw ve;
    res = {{"message", ve.message}, {"kind", ve.kind}, {"status", ve.status}};
  }
  if (upgraded) c.write_raw(res.dump());
  else c.send(200, res.dump());
}

std::pair<int, std::string> SbxV1::run_capture(const std::string& id, const std::vector<std::string>& args,
                                               size_t max) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("pipe");
  Fd r(p[0]), w(p[1]);
  engine::ExecRequest req;
  req.sandbox = id;
  req.args = args;
  req.stdout_fd = w.fd;
  Fd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  req.stderr_fd = devnull.fd;
  req.forward_signals = false;
  int code = 0;
  std::optional<Error> failure;
  std::thread t([&] {
    try {
      code = engine_.exec(req).exit_code;
    } catch (const Error& e) {
      failure = e;
    }
    w = Fd();
  });
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t k = ::read(r.fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    if (out.size() < max) out.append(buf, static_cast<size_t>(k));
  }
  t.join();
  if (failure) throw *failure;
  return {code, out};
}

void SbxV1::file_op(Connection& c, const Request& r, const std::string& id, const std::string& op) {
  json b = json::parse(r.body.empty() ? "{}" : r.body);
  std::string path = checked_path(b.value("path", ""));
  // Exit 3 from these scripts: the path does not exist (or is not a dir).
  auto sh = [&](const std::string& script) {
    auto res = run_capture(id, {"/bin/sh", "-c", script, "sh", path});
    if (res.first == 127 || res.first == 126)
      throw V1Error{400, "Unsupported", "files." + op + " needs /bin/sh and POSIX tools in the image"};
    return res;
  };
  auto parse_stat = [](const std::string& line, bool base_only) {
    // "SIZE HEXMODE MTIME NAME"
    std::istringstream in(line);
    uint64_t size = 0;
    std::string hex;
    int64_t mtime = 0;
    in >> size >> hex >> mtime;
    std::string name;
    std::getline(in, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    if (base_only) {
      auto slash = name.rfind('/');
      if (slash != std::string::npos) name = name.substr(slash + 1);
    }
    unsigned mode = static_cast<unsigned>(std::stoul(hex.empty() ? "0" : hex, nullptr, 16));
    std::string type = S_ISDIR(mode) ? "directory" : S_ISREG(mode) ? "file" : S_ISLNK(mode) ? "symlink" : "other";
    return json{{"name", name}, {"size", size}, {"mode", mode & 07777}, {"type", type}, {"mtime", mtime}};
  };
  if (op == "stat" || op == "exists") {
    auto [code, out] = sh("[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3; exec stat -c '%s %f %Y %n' -- \"$1\"");
    if (op == "exists") return (void)c.send(200, json{{"exists", code == 0}}.dump());
    if (code == 3) throw V1Error{404, "FileNotFound", "no such file in the sandbox: " + path};
    if (code != 0) throw V1Error{500, "Internal", "stat " + path + " failed (exit " + std::to_string(code) + ")"};
    json j = parse_stat(out.substr(0, out.find('\n')), false);
    j["name"] = path.substr(path.rfind('/') + 1);
    j["path"] = path;
    return (void)c.send(200, j.dump());
  }
  if (op == "list") {
    auto [code, out] = sh(
        "[ -d \"$1\" ] || exit 3; cd -- \"$1\" || exit 3; "
        "for f in * .[!.]* ..?*; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then stat -c '%s %f %Y %n' -- \"$f\"; fi; done");
    if (code == 3) throw V1Error{404, "FileNotFound", "no such directory in the sandbox: " + path};
    if (code != 0) throw V1Error{500, "Internal", "list " + path + " failed (exit " + std::to_string(code) + ")"};
    json entries = json::array();
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      json e = parse_stat(line, true);
      e["path"] = (path == "/" ? "" : path) + "/" + e["name"].get<std::string>();
      entries.push_back(e);
    }
    return (void)c.send(200, entries.dump());
  }
  if (op == "remove") {
    bool rec = b.value("recursive", false);
    auto [code, out] = sh(std::string("[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3; exec rm ") + (rec ? "-rf" : "-f") +
                          " -- \"$1\"");
    if (code == 3) throw V1Error{404, "FileNotFound", "no such file in the sandbox: " + path};
    if (code != 0)
      throw V1Error{400, "InvalidArgument",
                    "could not remove " + path + (rec ? "" : " (a directory needs recursive=True)")};
    return (void)c.send(204, "");
  }
  if (op == "mkdir") {
    bool parents = b.value("parents", true);
    auto [code, out] = sh(std::string("exec mkdir ") + (parents ? "-p " : "") + "-- \"$1\"");
    if (code != 0) throw V1Error{400, "InvalidArgument", "could not make directory " + path};
    return (void)c.send(204, "");
  }
  throw V1Error{404, "NotFound", "no file operation '" + op + "' (list, stat, exists, remove, mkdir)"};
}

}  // namespace sbx::server
