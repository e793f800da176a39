// envd's filesystem side for the E2B endpoint (server/e2b/e2b.h): the
// filesystem.Filesystem service (Stat, ListDir, MakeDir, Remove, Move, after
// envd's filesystem.proto) and envd's HTTP file transfer (GET /files?path=
// → the bytes; POST /files?path= with multipart/form-data or a raw
// application/octet-stream body → [{name, type, path}]).
//
// File contents move with the engine's copy_in / copy_out (`sbx cp`): the
// path is resolved inside the sandbox (openat2 RESOLVE_IN_ROOT for native,
// the sandbox's own tar for gVisor), never by string concatenation on the
// host, and nothing the sandbox names can make the server write outside its
// temp dir. The small operations run a POSIX sh helper inside the sandbox
// with Engine::exec, as the request's user: the paths are argv, never part
// of the script, and its output is NUL-separated fields, so no file name
// (newlines included) can confuse the parser. They need sh, stat, find,
// readlink, mkdir, rm and mv in the image (busybox has them).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/json_number.h"
#include "common/log.h"
#include "server/error_status.h"
#include "server/rfc3339.h"
#include "server/e2b/e2b.h"
#include "server/temp_dir.h"

namespace sbx::server {

using nlohmann::json;

namespace {

/// The helper: $1 the verb, then its paths. Prints the working directory
/// first (to make relative paths absolute), then per entry: the path as
/// reached, `stat -c '%f %s %U %G %Y'` (raw mode hex, size, owner, group,
/// mtime), the symlink target; every field NUL-terminated. Exit codes: 21 not
/// found, 20 not a directory, 23 already exists.
constexpr const char* kEntryFn = R"SH(entry() {
  s=$(stat -c '%f %s %U %G %Y' -- "$1") || return 1
  t=
  if [ -L "$1" ]; then t=$(readlink -- "$1"); fi
  printf '%s\0%s\0%s\0' "$1" "$s" "$t"
}
)SH";

constexpr const char* kVerbs = R"SH(exists() { [ -e "$1" ] || [ -L "$1" ]; }
verb=$1; shift
case $verb in
stat) printf '%s\0' "$PWD"; exists "$1" || exit 21; entry "$1" ;;
list)
  exists "$1" || exit 21
  [ -d "$1" ] || exit 20
  cd -- "$1" || exit 1
  printf '%s\0' "$PWD"
  find . -mindepth 1 -maxdepth "$2" -exec sh -c "$ENTRY"'
for f; do entry "$f"; done' sh {} + ;;
mkdir) printf '%s\0' "$PWD"; exists "$1" && exit 23; mkdir -p -- "$1" || exit 1; entry "$1" ;;
remove) exists "$1" || exit 21; rm -rf -- "$1" ;;
move)
  printf '%s\0' "$PWD"
  exists "$1" || exit 21
  mkdir -p -- "$(dirname -- "$2")" && mv -f -- "$1" "$2" || exit 1
  entry "$2" ;;
abs) printf '%s\0' "$PWD" ;;
real) exists "$1" || exit 21; readlink -f -- "$1" | tr -d '\n'; printf '\0' ;;
*) exit 2 ;;
esac
)SH";

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t z = s.find('\0', i);
    if (z == std::string::npos) break;  // an unterminated tail: not a whole field
    out.push_back(s.substr(i, z - i));
    i = z + 1;
  }
  return out;
}

std::string join_path(const std::string& cwd, const std::string& p) {
  std::string out = p.empty() || p[0] == '/' ? p : (cwd == "/" ? "/" : cwd + "/") + p;
  // "./x" from find, "a//b": tidy what the helper printed.
  std::string tidy;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '/' && !tidy.empty() && tidy.back() == '/') continue;
    if (out[i] == '.' && (i + 1 == out.size() || out[i + 1] == '/') && !tidy.empty() && tidy.back() == '/') {
      ++i;
      continue;
    }
    tidy += out[i];
  }
  if (tidy.size() > 1 && tidy.back() == '/') tidy.pop_back();
  return tidy;
}

std::string base_name(const std::string& p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

/// Go's os.FileMode.String() for a POSIX mode ("-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx").
std::string mode_string(unsigned mode) {
  std::string s;
  if (S_ISDIR(mode)) s += 'd';
  else if (S_ISLNK(mode)) s += 'L';
  else if (S_ISFIFO(mode)) s += 'p';
  else if (S_ISSOCK(mode)) s += 'S';
  else if (S_ISCHR(mode)) s += 'c';
  else if (S_ISBLK(mode)) s += 'D';
  else s += '-';
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) s += (mode & (0400u >> i)) ? rwx[i] : '-';
  return s;
}

/// One EntryInfo (protobuf JSON: int64 as a string, enum names) from a
/// helper triple.
json entry_json(const std::string& cwd, const std::string& path, const std::string& st, const std::string& target) {
  unsigned mode = 0;
  unsigned long long size = 0, mtime = 0;
  char owner[256] = "", group[256] = "";
  if (std::sscanf(st.c_str(), "%x %llu %255s %255s %llu", &mode, &size, owner, group, &mtime) != 5)
    throw ConnectError{"internal", "unexpected stat output from the sandbox: " + st};
  std::string type = S_ISDIR(mode) ? "FILE_TYPE_DIRECTORY" : S_ISREG(mode) ? "FILE_TYPE_FILE"
                     : S_ISLNK(mode) ? "FILE_TYPE_SYMLINK" : "FILE_TYPE_UNSPECIFIED";
  std::string abs = join_path(cwd, path);
  json e = {{"name", base_name(abs)},
            {"type", type},
            {"path", abs},
            {"size", std::to_string(size)},
            {"mode", mode & 07777},
            {"permissions", mode_string(mode)},
            {"owner", owner},
            {"group", group},
            {"modifiedTime", rfc3339(static_cast<int64_t>(mtime) * 1000)}};
  if (S_ISLNK(mode)) e["symlinkTarget"] = target;
  return e;
}

std::string read_back(int fd, size_t limit, const char* what) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  for (;;) {
    ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    out.append(buf, static_cast<size_t>(k));
    if (out.size() > limit) throw ConnectError{"resource_exhausted", std::string(what) + " output over its bound"};
  }
  return out;
}

/// The value of `key` in a header like `form-data; name="file"; filename="a b"`.
std::string header_param(const std::string& h, const std::string& key) {
  for (size_t i = 0; (i = h.find(key + "=", i)) != std::string::npos; i += key.size()) {
    if (i > 0 && h[i - 1] != ' ' && h[i - 1] != ';' && h[i - 1] != '\t') continue;
    size_t v = i + key.size() + 1;
    if (v < h.size() && h[v] == '"') {
      size_t e = h.find('"', v + 1);
      return h.substr(v + 1, e == std::string::npos ? std::string::npos : e - v - 1);
    }
    size_t e = h.find(';', v);
    std::string out = h.substr(v, e == std::string::npos ? std::string::npos : e - v);
    while (!out.empty() && (out.back() == ' ' || out.back() == '\r')) out.pop_back();
    return out;
  }
  return "";
}

/// Up to `n` bytes of `fd` from `off` (fewer at its end).
std::string pread_some(int fd, off_t off, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t k = ::pread(fd, out.data() + got, n - got, off + static_cast<off_t>(got));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw_errno("read the uploaded body");
    if (k == 0) break;
    got += static_cast<size_t>(k);
  }
  out.resize(got);
  return out;
}

/// The offset of the first `needle` at or after `from` in `fd` (of `size`
/// bytes), or -1; read 1 MiB at a time, never the whole file.
off_t find_in_file(int fd, off_t size, const std::string& needle, off_t from) {
  constexpr size_t kChunk = 1 << 20;
  for (off_t pos = from; pos < size;) {
    std::string buf = pread_some(fd, pos, kChunk + needle.size());
    size_t i = buf.find(needle);
    if (i != std::string::npos) return pos + static_cast<off_t>(i);
    if (buf.size() < kChunk + needle.size()) return -1;
    pos += static_cast<off_t>(buf.size() - needle.size() + 1);
  }
  return -1;
}

/// One uploaded file: its name and where its bytes lie in the body file.
struct Part {
  std::string filename;
  off_t offset = 0;
  off_t length = 0;
};

/// The parts named "file" of the multipart/form-data (RFC 7578) body in
/// `fd` (`size` bytes), found without reading it into memory.
std::vector<Part> parse_multipart(int fd, off_t size, const std::string& boundary) {
  constexpr size_t kMaxPartHead = 16 * 1024;
  std::vector<Part> parts;
  const std::string delim = "--" + boundary;
  off_t pos = find_in_file(fd, size, delim, 0);
  if (pos < 0) throw HttpError{400, "multipart body without its boundary"};
  for (;;) {
    pos += static_cast<off_t>(delim.size());
    std::string after = pread_some(fd, pos, 2);
    if (after == "--") break;
    if (after != "\r\n") throw HttpError{400, "malformed multipart body"};
    pos += 2;
    std::string window = pread_some(fd, pos, kMaxPartHead);
    size_t he = window.find("\r\n\r\n");
    if (he == std::string::npos) throw HttpError{400, "malformed multipart part headers"};
    std::string headers = window.substr(0, he);
    off_t start = pos + static_cast<off_t>(he) + 4;
    off_t next = find_in_file(fd, size, "\r\n" + delim, start);
    if (next < 0) throw HttpError{400, "multipart body not terminated"};
    std::string disp;
    for (size_t i = 0; i < headers.size();) {
      size_t e = headers.find("\r\n", i);
      if (e == std::string::npos) e = headers.size();
      std::string line = headers.substr(i, e - i);
      if (line.size() > 20 && strncasecmp(line.c_str(), "content-disposition:", 20) == 0) disp = line.substr(20);
      i = e + 2;
    }
    if (header_param(disp, "name") == "file")
      parts.push_back({url_decode(header_param(disp, "filename")), start, next - start});
    pos = next + 2;
  }
  return parts;
}

/// Copies `length` bytes of `in` from `offset` to the start of `out`
/// (copy_file_range: in the kernel, no user buffer).
void copy_range(int in, off_t offset, off_t length, int out, const std::string& what) {
  off_t off = offset;
  while (length > 0) {
    ssize_t k = ::copy_file_range(in, &off, out, nullptr, static_cast<size_t>(length), 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
      // Not between these files: through a buffer, a piece at a time.
      while (length > 0) {
        std::string piece = pread_some(in, off, static_cast<size_t>(std::min<off_t>(length, 1 << 20)));
        if (piece.empty()) throw Error("write " + what + ": the upload ended early");
        fs::write_all(out, piece, what);
        off += static_cast<off_t>(piece.size());
        length -= static_cast<off_t>(piece.size());
      }
      return;
    }
    if (k < 0) throw_errno("write " + what);
    if (k == 0) throw Error("write " + what + ": the upload ended early");
    length -= k;
  }
}

}  // namespace

std::string E2bApi::run_helper(const E2bSandbox& sb, const std::vector<std::string>& args, const std::string& user,
                               int& code, std::string* err) {
  Fd out(::memfd_create("sbx-e2b-out", MFD_CLOEXEC)), errf(::memfd_create("sbx-e2b-err", MFD_CLOEXEC));
  if (out.fd < 0 || errf.fd < 0) throw_errno("memfd for an E2B helper");
  engine::ExecRequest req;
  req.sandbox = sb.sbx_id;
  req.args = args;
  req.user = user;
  req.stdout_fd = out.fd;
  req.stderr_fd = errf.fd;
  req.forward_signals = false;
  req.timeout = std::chrono::seconds(120);
  code = engine_.exec(req).exit_code;
  if (err) *err = read_back(errf.fd, 1 << 20, "helper stderr");
  return read_back(out.fd, 64u << 20, "helper");
}

json E2bApi::filesystem_unary(const std::string& method, const json& in, const Request& r,
                              const std::shared_ptr<E2bSandbox>& sb) {
  auto helper = [&](const std::vector<std::string>& verb_args) {
    std::vector<std::string> args = {"/bin/sh", "-c", std::string(kEntryFn) + kVerbs, "sh"};
    args.insert(args.end(), verb_args.begin(), verb_args.end());
    int code = 0;
    std::string err, out;
    {
      Fd o(::memfd_create("sbx-e2b-out", MFD_CLOEXEC)), e(::memfd_create("sbx-e2b-err", MFD_CLOEXEC));
      if (o.fd < 0 || e.fd < 0) throw_errno("memfd for an E2B helper");
      engine::ExecRequest req;
      req.sandbox = sb->sbx_id;
      req.args = args;
      req.env = {std::string("ENTRY=") + kEntryFn};  // the entry function again, for find's child shells
      req.user = request_user(r);
      req.stdout_fd = o.fd;
      req.stderr_fd = e.fd;
      req.forward_signals = false;
      req.timeout = std::chrono::seconds(120);
      code = engine_.exec(req).exit_code;
      err = read_back(e.fd, 1 << 20, "helper stderr");
      out = read_back(o.fd, 64u << 20, "helper");
    }
    std::string what = verb_args.size() > 1 ? verb_args[1] : "";
    if (code == 21) throw ConnectError{"not_found", "path '" + what + "' does not exist"};
    if (code == 20) throw ConnectError{"invalid_argument", "path '" + what + "' is not a directory"};
    if (code == 23) throw ConnectError{"already_exists", "path '" + what + "' already exists"};
    if (code == 126 || code == 127)
      throw ConnectError{"failed_precondition", "the sandbox's image lacks what sbx's file operations need (sh, stat, find): " + err};
    if (code != 0) throw ConnectError{"internal", method + " '" + what + "' failed in the sandbox: " + err};
    return split_nul(out);
  };
  auto path_of = [&](const char* key) {
    std::string p = in.value(key, "");
    if (p.empty()) throw ConnectError{"invalid_argument", std::string(key) + " is empty"};
    return p;
  };
  auto one_entry = [&](const std::vector<std::string>& f) {
    if (f.size() < 4) throw ConnectError{"internal", "no entry from the sandbox's helper"};
    return entry_json(f[0], f[1], f[2], f[3]);
  };
  if (method == "Stat") return {{"entry", one_entry(helper({"stat", path_of("path")}))}};
  if (method == "MakeDir") return {{"entry", one_entry(helper({"mkdir", path_of("path")}))}};
  if (method == "Move") return {{"entry", one_entry(helper({"move", path_of("source"), path_of("destination")}))}};
  if (method == "Remove") {
    helper({"remove", path_of("path")});
    return json::object();
  }
  if (method == "ListDir") {
    int64_t depth = json_number::to_int64(in.value("depth", json(1))).value_or(1);
    if (depth < 1) depth = 1;
    auto f = helper({"list", path_of("path"), std::to_string(depth)});
    if (f.empty()) throw ConnectError{"internal", "no listing from the sandbox's helper"};
    json entries = json::array();
    for (size_t i = 1; i + 2 < f.size(); i += 3) entries.push_back(entry_json(f[0], f[i], f[i + 1], f[i + 2]));
    return {{"entries", entries}};
  }
  throw ConnectError{"unimplemented", "filesystem.Filesystem/" + method +
                                          " is not served by sbx (served: Stat, ListDir, MakeDir, Remove, Move)"};
}

void E2bApi::files_get(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb) {
  std::string path = r.param("path");
  if (path.empty()) throw HttpError{400, "path is required"};
  std::string user = r.param("username");
  auto resolve = [&](const char* verb) {
    int code = 0;
    std::string err;
    auto f = split_nul(run_helper(*sb, {"/bin/sh", "-c", std::string(kEntryFn) + kVerbs, "sh", verb, path}, user,
                                  code, &err));
    if (code == 21) throw HttpError{404, "path '" + path + "' does not exist"};
    if (code != 0 || f.empty()) throw HttpError{500, "resolve '" + path + "' in the sandbox: " + err};
    return f[0];
  };
  // Relative paths and symlinks are resolved inside the sandbox first; an
  // absolute path of a plain file goes straight to the copy.
  std::string src = path[0] == '/' ? path : resolve("real");
  TempDir tmp(engine_.config().root);
  std::string host = tmp.path() + "/f";
  for (int round = 0;; ++round) {
    try {
      engine_.copy_out(sb->sbx_id, src, host, kMaxCopyStage);
    } catch (const Error& e) {
      // Past the staging bound (gVisor's copy streams holes as data): over
      // what a read answers, the same 413 as a size over it.
      if (e.err() == EFBIG) throw HttpError{413, file_read_too_large(src, UINT64_MAX)};
      bool nf = v1_status(e).kind == ErrorKind::FileNotFound;
      if (!nf) resolve("real");  // a missing path: 404 (gVisor's tar copy says only that the copy failed)
      throw HttpError{nf ? 404 : 500, e.what()};
    }
    struct stat st {};
    if (::lstat(host.c_str(), &st) < 0) throw HttpError{500, "copy of " + path + " left nothing"};
    if (S_ISREG(st.st_mode)) break;
    if (S_ISDIR(st.st_mode)) throw HttpError{400, "path '" + path + "' is a directory"};
    if (!S_ISLNK(st.st_mode) || round > 0) throw HttpError{400, "path '" + path + "' is not a regular file"};
    std::error_code ec;
    std::filesystem::remove(host, ec);
    src = resolve("real");
  }
  Fd fd(::open(host.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) < 0) throw HttpError{500, "read the copy of " + path};
  if (static_cast<uint64_t>(st.st_size) > kMaxFileRead)
    throw HttpError{413, file_read_too_large(path, static_cast<uint64_t>(st.st_size))};
  std::string name = base_name(src);
  std::string quoted;
  for (char ch : name) quoted += (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '_' : ch;
  if (!c.begin_body(200, "application/octet-stream", static_cast<uint64_t>(st.st_size),
                    {{"Content-Disposition", "inline; filename=\"" + quoted + "\""}}))
    return;
  char buf[1 << 16];
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t k = ::read(fd.fd, buf, static_cast<size_t>(std::min<off_t>(left, sizeof buf)));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {  // the length is promised: the connection cannot be reused
      c.set_close();
      return;
    }
    if (!c.write_raw(std::string_view(buf, static_cast<size_t>(k)))) return;
    left -= k;
  }
}

void E2bApi::files_post(Connection& c, const Request& r, const std::shared_ptr<E2bSandbox>& sb) {
  std::string path = r.param("path");
  std::string user = r.param("username");
  std::string ctype = r.header("content-type");
  std::string enc = r.header("content-encoding");
  if (!enc.empty() && enc != "identity")
    throw HttpError{415, "Content-Encoding " + enc + " is not supported by sbx serve; send the bytes as they are"};
  // The body is on disk (body_rule: spooled, bounded); its parts are copied
  // out of it, never read into memory whole.
  Fd body(::open(r.body_file.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat bst {};
  if (body.fd < 0 || ::fstat(body.fd, &bst) < 0) throw_errno("open the uploaded body " + r.body_file);
  std::vector<Part> parts;
  if (ctype.rfind("multipart/form-data", 0) == 0) {
    std::string b = header_param(ctype, "boundary");
    if (b.empty()) throw HttpError{400, "multipart/form-data without a boundary"};
    parts = parse_multipart(body.fd, bst.st_size, b);
  } else {
    parts.push_back({"", 0, bst.st_size});
  }
  if (parts.empty()) throw HttpError{400, "no part named \"file\" in the upload"};
  std::string cwd;
  json out = json::array();
  TempDir tmp(engine_.config().root);
  int n = 0;
  for (const auto& part : parts) {
    std::string dest = path.empty() ? part.filename : path;
    if (dest.empty()) throw HttpError{400, "no path for an uploaded file (?path= or the part's filename)"};
    if (dest[0] != '/') {
      if (cwd.empty()) {
        int code = 0;
        auto f = split_nul(run_helper(*sb, {"/bin/sh", "-c", std::string(kEntryFn) + kVerbs, "sh", "abs"}, user, code));
        if (code != 0 || f.empty()) throw HttpError{500, "find the working directory of sandbox " + sb->id};
        cwd = f[0];
      }
      dest = join_path(cwd, dest);
    }
    std::string base = base_name(dest);
    if (base.empty() || base == "." || base == "..")
      throw HttpError{400, "path '" + dest + "' names a directory, not a file"};
    // The host copy carries the destination's own name: copy_in (docker cp
    // semantics) puts it under that name.
    std::string dir = tmp.path() + "/" + std::to_string(n++);
    fs::mkdir_p(dir, 0700);
    std::string host = dir + "/" + base;
    {
      Fd fd(::open(host.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
      if (fd.fd < 0) throw_errno("create " + host);
      copy_range(body.fd, part.offset, part.length, fd.fd, host);
    }
    try {
      engine_.copy_in(sb->sbx_id, host, dest);
    } catch (const Error&) {
      // Most likely a missing parent: E2B creates it. (Any other failure
      // comes back from the second try.)
      int code = 0;
      std::string err;
      std::string parent = dest.substr(0, dest.find_last_of('/'));
      run_helper(*sb, {"mkdir", "-p", "--", parent.empty() ? "/" : parent}, user, code, &err);
      if (code != 0) throw HttpError{400, "create " + parent + " in the sandbox: " + err};
      engine_.copy_in(sb->sbx_id, host, dest);
    }
    out.push_back({{"name", base_name(dest)}, {"type", "file"}, {"path", dest}});
  }
  c.send(200, out.dump());
}

}  // namespace sbx::server
