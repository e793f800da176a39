#include "engine/trajectory.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <regex>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/json_number.h"
#include "oci/auth_config.h"
#include "oci/digest.h"
#include "runtime/linux/time_namespace.h"
#include "runtime/state.h"
#include "spec/spec_json.h"

namespace sbx::engine::trajectory {

using json = nlohmann::json;
namespace sfs = std::filesystem;

std::string dir_of(const std::string& run_root, const std::string& id) {
  return runtime::sandbox_dir(run_root, id) + "/trajectory";
}

bool recorded(const std::string& run_root, const std::string& id) {
  return fs::exists(dir_of(run_root, id) + "/trajectory.jsonl");
}

namespace {

/// A path made of plain components: no empty, "." or ".." one, no NUL.
/// `absolute`: it starts with "/" (a path in the sandbox); else relative
/// ("" is the copy's root).
bool is_plain_path(const json& v, bool absolute) {
  if (!v.is_string()) return false;
  const std::string& p = v.get_ref<const std::string&>();
  if (p.size() > 4096 || p.find('\0') != std::string::npos) return false;
  if (!absolute && p.empty()) return true;
  if (absolute != (!p.empty() && p.front() == '/')) return false;
  size_t i = absolute ? 1 : 0;
  while (true) {
    size_t slash = p.find('/', i);
    std::string c = p.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (c.empty() || c == "." || c == "..") return false;
    if (slash == std::string::npos) return true;
    i = slash + 1;
  }
}

/// Why a file entry (a checkpoint's or a copy's manifest's) cannot be
/// written back; "" when it can.
std::string bad_entry(const json& f, bool absolute) {
  if (!f.is_object()) return "an entry is not an object";
  if (!is_plain_path(f.value("path", json()), absolute))
    return "the path " + f.value("path", json()).dump() + " is not a plain " +
           (absolute ? "absolute path" : "relative path") + " (no '.', '..' or empty components)";
  std::string type = f.value("type", json("")).is_string() ? f.value("type", "") : "";
  if (type != "file" && type != "dir" && type != "symlink") return "the type of " + f["path"].dump() + " is not file, dir or symlink";
  if (type == "file" && !(f.value("sha256", json()).is_string() && oci::is_sha256_hex(f["sha256"].get_ref<const std::string&>())))
    return "the sha256 of " + f["path"].dump() + " is not 64 hex digits";
  for (const char* k : {"mode", "size"})
    if (f.contains(k) && !f[k].is_number_unsigned()) return std::string("the ") + k + " of " + f["path"].dump() + " is not a number";
  if (f.contains("target") && !f["target"].is_string()) return "the link target of " + f["path"].dump() + " is not a string";
  if (f.contains("opaque") && !f["opaque"].is_boolean()) return "opaque of " + f["path"].dump() + " is not true or false";
  return "";
}

/// Why step `s` cannot be used (its checkpoint, its copy's manifest: what a
/// branch or a replay writes on the host and into a sandbox); "" when fine.
/// Refused here, in the one reader, so that a hostile file never gets as far
/// as writing a file outside the scratch dir or reading a host file as an
/// "object".
std::string bad_step(const json& s) {
  if (s.contains("timeout_ms") && !s["timeout_ms"].is_null()) {
    auto ms = json_number::to_int64(s["timeout_ms"]);
    if (!ms || *ms < 0) return "its timeout_ms " + s["timeout_ms"].dump() + " is not a whole number of ms >= 0";
  }
  if (s.contains("checkpoint") && !s["checkpoint"].is_null()) {
    const json& c = s["checkpoint"];
    if (!c.is_object()) return "its checkpoint is not an object";
    const json& files = c.value("files", json::array());
    const json& deleted = c.value("deleted", json::array());
    if (!files.is_array() || !deleted.is_array()) return "its checkpoint's files or deleted is not a list";
    for (const auto& f : files)
      if (auto why = bad_entry(f, true); !why.empty()) return "checkpoint: " + why;
    for (const auto& d : deleted)
      if (!is_plain_path(d, true)) return "checkpoint: the deleted path " + d.dump() + " is not a plain absolute path";
  }
  if (s.value("kind", "") == "cp_in") {
    const json& name = s.value("source_name", json(""));
    if (!name.is_string() || name.get_ref<const std::string&>().find('/') != std::string::npos ||
        name.get_ref<const std::string&>().find('\0') != std::string::npos)
      return "its source_name " + name.dump() + " is not a single path component";
    const json& m = s.value("manifest", json::array());
    if (!m.is_array()) return "its manifest is not a list";
    for (const auto& f : m)
      if (auto why = bad_entry(f, false); !why.empty()) return "manifest: " + why;
  }
  return "";
}

}  // namespace

Trajectory parse(const std::string& text, const std::string& what) {
  Trajectory t;
  size_t pos = 0, line = 0;
  if (text.empty()) throw Error(what + ": empty, not a trajectory (no header line)");
  if (text.back() != '\n')
    throw Error(what + ": truncated: the last line has no newline (the file was cut while a step was written)");
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    json j;
    try {
      j = json::parse(l);
    } catch (const std::exception& e) {
      throw Error(what + ": line " + std::to_string(line) + " is not JSON (" + e.what() + "): corrupt trajectory");
    }
    if (!j.is_object()) throw Error(what + ": line " + std::to_string(line) + " is not a JSON object: corrupt trajectory");
    if (line == 1) {
      if (j.value("format", "") != "sbx-trajectory")
        throw Error(what + ": line 1 is not an sbx trajectory header (no \"format\": \"sbx-trajectory\")");
      if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kFormatVersion)
        throw Error(what + ": trajectory format version " + (j.contains("version") ? j["version"].dump() : "(none)") +
                    " is not " + std::to_string(kFormatVersion) + ", the one this sbx reads");
      t.header = std::move(j);
      continue;
    }
    if (!j.contains("step") || !j["step"].is_number_integer() || !j.contains("kind") || !j["kind"].is_string())
      throw Error(what + ": line " + std::to_string(line) + " has no \"step\" number or \"kind\": corrupt trajectory");
    int want = static_cast<int>(t.steps.size()) + (t.steps.empty() && j["step"].get<int>() == 0 ? 0 : 1);
    if (!t.steps.empty()) want = t.steps.back()["step"].get<int>() + 1;
    if (j["step"].get<int>() != want)
      throw Error(what + ": line " + std::to_string(line) + " is step " + j["step"].dump() + ", expected " +
                  std::to_string(want) + ": corrupt trajectory");
    if (auto why = bad_step(j); !why.empty())
      throw Error(what + ": step " + j["step"].dump() + " (line " + std::to_string(line) + "): " + why +
                  ": refused (corrupt or hostile trajectory)");
    t.steps.push_back(std::move(j));
  }
  return t;
}

bool is_secret_name(const std::string& name, const std::vector<std::string>& redact) {
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* w : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (up.find(w) != std::string::npos) return true;
  for (const auto& r : redact) {
    if (r == name) return true;
    try {
      if (std::regex_match(name, std::regex(r))) return true;
    } catch (const std::regex_error&) {
      // Not a regex: an exact name only (compared above).
    }
  }
  return false;
}

json env_json(const std::vector<std::string>& env, const std::vector<std::string>& redact) {
  json out = json::array();
  for (const auto& e : env) {
    auto eq = e.find('=');
    std::string k = e.substr(0, eq), v = eq == std::string::npos ? "" : e.substr(eq + 1);
    if (is_secret_name(k, redact))
      out.push_back({{"name", k}, {"sha256", oci::sha256_hex(v)}});
    else
      out.push_back({{"name", k}, {"value", v}});
  }
  return out;
}

void write_scratch_file(const std::string& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.fd < 0) throw Error("cannot write " + path, errno);
  fs::write_all(fd.fd, data, path);
  if (::ftruncate(fd.fd, static_cast<off_t>(data.size())) != 0) throw Error("cannot truncate " + path, errno);
}

std::string read_header_line(const std::string& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) throw Error("cannot open trajectory " + file, errno);
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd.fd, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    auto nl = out.find('\n');
    if (nl != std::string::npos) return out.substr(0, nl);
  }
  return out;
}

void append_line(const std::string& file, const json& j) {
  std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  Fd fd(::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (fd.fd < 0) throw Error("cannot open trajectory " + file, errno);
  ssize_t n = ::write(fd.fd, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) throw Error("cannot append to trajectory " + file, errno);
  // No fsync: the line is in the page cache once write(2) returns, so a
  // killed sbx or sandbox loses nothing; only a host crash can (the sandbox
  // does not outlive that either). An fsync per step cost 2-8 ms here.
}

std::string put_object(const std::string& objects_dir, const std::string& data) {
  std::string h = oci::sha256_hex(data);
  std::string p = objects_dir + "/" + h;
  if (!fs::exists(p)) {
    fs::mkdir_p(objects_dir, 0700);
    fs::write_file_atomic(p, data, 0600);
  }
  return h;
}

std::string put_object_file(const std::string& objects_dir, const std::string& path) {
  std::string h = oci::sha256_file_hex(path);
  std::string p = objects_dir + "/" + h;
  if (!fs::exists(p)) {
    fs::mkdir_p(objects_dir, 0700);
    std::error_code ec;
    std::string tmp = p + ".tmp." + std::to_string(::getpid());
    sfs::copy_file(path, tmp, sfs::copy_options::overwrite_existing, ec);
    if (ec || ::rename(tmp.c_str(), p.c_str()) != 0) {
      ::unlink(tmp.c_str());
      throw Error("cannot store " + path + " in the trajectory's objects " + objects_dir + ": " + ec.message());
    }
  }
  return h;
}

namespace {

/// One entry of the upper dir as the change check compares it.
struct Seen {
  std::string type;  // file, dir, symlink, whiteout, other
  uint32_t mode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  uint64_t ino = 0;
};

json seen_json(const Seen& s) { return json::array({s.type, s.mode, s.size, s.mtime_ns, s.ctime_ns, s.ino}); }

bool opaque(const std::string& path) {
  char v[4];
  for (const char* a : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
    ssize_t n = ::lgetxattr(path.c_str(), a, v, sizeof v);
    if (n >= 1 && v[0] == 'y') return true;
  }
  return false;
}

void scan(const std::string& root, const std::string& rel, std::map<std::string, Seen>& out) {
  std::string dir = root + rel;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string r = rel + "/" + n;
    struct stat st {};
    if (::lstat((root + r).c_str(), &st) != 0) continue;
    Seen s;
    s.mode = st.st_mode & 07777;
    s.size = static_cast<uint64_t>(st.st_size);
    s.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    s.ctime_ns = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    s.ino = st.st_ino;
    if (S_ISREG(st.st_mode)) s.type = "file";
    else if (S_ISDIR(st.st_mode)) s.type = "dir";
    else if (S_ISLNK(st.st_mode)) s.type = "symlink";
    else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) s.type = "whiteout";
    else s.type = "other";
    out[r] = s;
    if (s.type == "dir") scan(root, r, out);
  }
  ::closedir(d);
}

}  // namespace

json checkpoint_upper(const std::string& tdir, const std::string& upper_dir) {
  std::map<std::string, Seen> now;
  scan(upper_dir, "", now);
  json before = json::object();
  std::string state_file = tdir + "/upper.state";
  if (fs::exists(state_file)) {
    try {
      before = json::parse(fs::read_file(state_file));
    } catch (const std::exception&) {
      before = json::object();  // rebuilt below: every entry counts as changed
    }
  }
  json files = json::array(), deleted = json::array(), state = json::object();
  uint64_t bytes = 0;
  std::string objects = tdir + "/objects";
  for (const auto& [path, s] : now) {
    json sj = seen_json(s);
    state[path] = sj;
    if (before.contains(path) && before[path] == sj) continue;
    std::string full = upper_dir + path;
    if (s.type == "whiteout") {
      deleted.push_back(path);
    } else if (s.type == "file") {
      std::string h = put_object_file(objects, full);
      files.push_back({{"path", path}, {"type", "file"}, {"mode", s.mode}, {"size", s.size}, {"sha256", h}});
      bytes += s.size;
    } else if (s.type == "dir") {
      json f = {{"path", path}, {"type", "dir"}, {"mode", s.mode}};
      // A directory removed and made again hides what the image had there.
      if (opaque(full)) f["opaque"] = true;
      // Only a new directory or a changed mode matters: a changed mtime
      // just says its entries changed, and those are entries of their own.
      if (!before.contains(path) || before[path][1] != sj[1] || f.contains("opaque")) files.push_back(f);
    } else if (s.type == "symlink") {
      std::error_code ec;
      auto target = sfs::read_symlink(full, ec);
      files.push_back({{"path", path}, {"type", "symlink"}, {"target", target.string()}});
    }
  }
  for (const auto& [path, sj] : before.items())
    if (!now.count(path)) {
      // Gone from the upper dir without a whiteout: it existed only there.
      // Its parent gone too covers it.
      auto slash = path.rfind('/');
      std::string parent = path.substr(0, slash);
      if (!parent.empty() && before.contains(parent) && !now.count(parent)) continue;
      deleted.push_back(path);
    }
  // The usual step changes nothing: then there is nothing to write either.
  if (state != before) write_scratch_file(state_file, state.dump());
  if (files.empty() && deleted.empty()) return nullptr;
  return json{{"files", files}, {"deleted", deleted}, {"bytes", bytes}};
}

std::map<std::string, json> files_at(const Trajectory& t, int at) {
  int last = t.steps.empty() ? 0 : t.steps.back()["step"].get<int>();
  int first = t.steps.empty() ? 1 : t.steps.front()["step"].get<int>();
  if (at < first || at > last)
    throw Error(ErrorKind::NotFound, "step " + std::to_string(at) + " is out of range: the trajectory has steps " + std::to_string(first) +
                ".." + std::to_string(last));
  std::map<std::string, json> state;
  for (const auto& s : t.steps) {
    if (s["step"].get<int>() > at) break;
    if (s.contains("not_restorable"))
      throw Error("step " + s["step"].dump() + " cannot be restored: " + s["not_restorable"].get<std::string>());
    if (!s.contains("checkpoint") || s["checkpoint"].is_null()) continue;
    const json& c = s["checkpoint"];
    for (const auto& d : c.value("deleted", json::array())) {
      std::string p = d.get<std::string>();
      for (auto it = state.lower_bound(p); it != state.end() && it->first.compare(0, p.size(), p) == 0;) {
        if (it->first.size() == p.size() || it->first[p.size()] == '/')
          it = state.erase(it);
        else
          ++it;
      }
      state[p] = {{"type", "deleted"}};
    }
    for (const auto& f : c.value("files", json::array())) state[f["path"].get<std::string>()] = f;
  }
  return state;
}

std::vector<std::string> materialize(const std::map<std::string, json>& state, const std::string& objects_dir,
                                     const std::string& dir) {
  std::vector<std::string> to_delete;
  fs::mkdir_p(dir, 0755);
  for (const auto& [path, e] : state) {
    std::string type = e.value("type", "");
    std::string dst = dir + path;
    if (type == "deleted" || e.value("opaque", false)) to_delete.push_back(path);
    if (type == "deleted") continue;
    // Never through a link made here: a file "under" a symlink of the same
    // state would land wherever the link points, on the host.
    for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      auto parent = state.find(path.substr(0, slash));
      if (parent != state.end() && parent->second.value("type", "") == "symlink")
        throw Error(ErrorKind::InvalidArgument, "the trajectory's files put " + path + " under the symlink " + parent->first +
                    ": refused (corrupt or hostile trajectory)");
    }
    fs::mkdir_p(sfs::path(dst).parent_path().string(), 0755);
    if (type == "dir") {
      fs::mkdir_p(dst, 0755);
      ::chmod(dst.c_str(), e.value("mode", 0755u));
    } else if (type == "symlink") {
      if (::symlink(e.value("target", "").c_str(), dst.c_str()) != 0)
        throw Error("cannot make symlink " + dst, errno);
    } else if (type == "file") {
      std::string obj = objects_dir + "/" + e.value("sha256", "");
      if (!fs::exists(obj))
        throw Error(ErrorKind::NotFound, "checkpoint object " + e.value("sha256", "") + " of " + path + " is missing from " + objects_dir +
                    ": the trajectory's checkpoints are incomplete");
      std::error_code ec;
      sfs::copy_file(obj, dst, sfs::copy_options::overwrite_existing, ec);
      if (ec) throw Error("cannot copy " + obj + " to " + dst + ": " + ec.message());
      ::chmod(dst.c_str(), e.value("mode", 0644u));
    }
  }
  return to_delete;
}

namespace {

bool is_tar(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) throw Error("cannot open " + path, errno);
  char buf[263];
  ssize_t n = ::pread(fd.fd, buf, sizeof buf, 0);
  return n == static_cast<ssize_t>(sizeof buf) && std::string(buf + 257, 5) == "ustar";
}

void untar(const std::string& path, const std::string& dir) {
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive* w = archive_write_disk_new();
  // Entries are checked below (no absolute names, no ".."), then put under `dir`.
  archive_write_disk_set_options(w, ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  std::string err;
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK)
    err = archive_error_string(a) ? archive_error_string(a) : "cannot open";
  archive_entry* e;
  while (err.empty()) {
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) {
      err = archive_error_string(a) ? archive_error_string(a) : "bad header";
      break;
    }
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    if (name.empty() || name.front() == '/' || ("/" + name + "/").find("/../") != std::string::npos ||
        archive_entry_filetype(e) != AE_IFREG) {
      err = "unexpected entry '" + name + "' (an export holds trajectory.jsonl and objects/ files only)";
      break;
    }
    if (name.find('/') != std::string::npos) fs::mkdir_p(dir + "/" + name.substr(0, name.rfind('/')), 0700);
    archive_entry_set_pathname(e, (dir + "/" + name).c_str());
    if (archive_write_header(w, e) != ARCHIVE_OK) {
      err = archive_error_string(w) ? archive_error_string(w) : "cannot write " + name;
      break;
    }
    const void* buf;
    size_t size;
    la_int64_t off;
    while ((r = archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK)
      if (archive_write_data_block(w, buf, size, off) != ARCHIVE_OK) break;
    if (r != ARCHIVE_EOF) {
      err = archive_error_string(a) ? archive_error_string(a) : "truncated archive";
      break;
    }
    archive_write_finish_entry(w);
  }
  archive_read_free(a);
  archive_write_free(w);
  if (!err.empty()) throw Error(path + ": not a readable trajectory archive: " + err);
}

}  // namespace

Trajectory import_mini_swe_agent(const json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array())
    throw Error(what + ": not a mini-swe-agent trajectory (no \"messages\" list)");
  Trajectory t;
  t.header = {{"format", "sbx-trajectory"},
              {"version", kFormatVersion},
              {"imported_from", {{"format", j.value("trajectory_format", "mini-swe-agent")}, {"file", what}}},
              {"image", json::object()},
              {"spec", nullptr}};
  static const std::regex bash_block("```(?:bash|sh)[ \t]*\n([\\s\\S]*?)\n?```");
  static const std::regex rc_re("<returncode>\\s*(-?[0-9]+)\\s*</returncode>");
  const json& msgs = j["messages"];
  int step = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    if (m.value("role", "") != "assistant" || !m.contains("content") || !m["content"].is_string()) continue;
    std::string content = m["content"].get<std::string>();
    std::smatch cmd;
    if (!std::regex_search(content, cmd, bash_block)) continue;  // a format error the agent was told about
    std::string obs;
    if (i + 1 < msgs.size() && msgs[i + 1].contains("content") && msgs[i + 1]["content"].is_string())
      obs = msgs[i + 1]["content"].get<std::string>();
    std::smatch rc;
    if (!std::regex_search(obs, rc, rc_re)) continue;  // no observation of a run (e.g. the final submission)
    json s = {{"step", ++step},
              {"kind", "exec"},
              // mini-swe-agent runs each action in a fresh shell, stderr into stdout.
              {"argv", json::array({"sh", "-c", "{ " + cmd[1].str() + "\n} 2>&1"})},
              {"env", json::array()},
              {"workdir", ""},
              {"user", ""},
              {"tty", false},
              {"stdin", nullptr},
              {"stderr", nullptr},
              {"exit_code", std::stoi(rc[1].str())},
              {"end_reason", "exited"}};
    auto a = obs.find("<output>\n"), b = obs.rfind("</output>");
    if (a != std::string::npos && b != std::string::npos && b >= a + 9 &&
        obs.find("<warning>") == std::string::npos) {
      std::string out = obs.substr(a + 9, b - a - 9);
      s["stdout"] = {{"size", out.size()},
                     {"sha256", oci::sha256_hex(out)},
                     {"data_b64", oci::base64_encode(out.substr(0, kStreamBound))},
                     {"truncated", out.size() > kStreamBound}};
    } else {
      s["stdout"] = nullptr;  // the observation was shortened: only the exit code is compared
    }
    t.steps.push_back(std::move(s));
  }
  if (t.steps.empty()) throw Error(what + ": no bash action with an observed return code in this mini-swe-agent trajectory");
  return t;
}

Trajectory load(const std::string& path, const std::string& scratch) {
  if (!fs::exists(path)) throw Error("no such trajectory file: " + path);
  std::string file = path, base;
  if (is_tar(path)) {
    fs::mkdir_p(scratch, 0700);
    untar(path, scratch);
    file = scratch + "/trajectory.jsonl";
    if (!fs::exists(file)) throw Error(path + ": the archive holds no trajectory.jsonl");
  }
  std::string text = fs::read_file(file);
  if (!text.empty() && text.front() == '{' && text.find("\"messages\"") != std::string::npos &&
      text.find("\"sbx-trajectory\"") == std::string::npos) {
    json j;
    try {
      j = json::parse(text);
    } catch (const std::exception& e) {
      throw Error(path + ": not a trajectory (neither sbx's JSON lines nor a mini-swe-agent file): " + e.what());
    }
    return import_mini_swe_agent(j, path);
  }
  Trajectory t = parse(text, path);
  t.objects_dir = sfs::path(file).parent_path().string() + "/objects";
  return t;
}

uint64_t export_tar(const std::string& tdir, const std::string& out) {
  std::string tmp = out + ".tmp." + std::to_string(::getpid());
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_filename(a, tmp.c_str()) != ARCHIVE_OK) {
    std::string e = archive_error_string(a) ? archive_error_string(a) : "cannot open";
    archive_write_free(a);
    throw Error("cannot write " + out + ": " + e);
  }
  auto add = [&](const std::string& host, const std::string& name) {
    std::string data = fs::read_file(host);
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    bool ok = archive_write_header(a, e) == ARCHIVE_OK &&
              archive_write_data(a, data.data(), data.size()) == static_cast<la_ssize_t>(data.size());
    archive_entry_free(e);
    if (!ok) throw Error("cannot write " + out + ": " + std::string(archive_error_string(a)));
  };
  try {
    add(tdir + "/trajectory.jsonl", "trajectory.jsonl");
    std::error_code ec;
    if (fs::exists(tdir + "/objects"))
      for (const auto& e : sfs::directory_iterator(tdir + "/objects", ec))
        if (e.is_regular_file() && oci::is_sha256_hex(e.path().filename().string()))
          add(e.path().string(), "objects/" + e.path().filename().string());
    if (archive_write_close(a) != ARCHIVE_OK) throw Error("cannot write " + out + ": " + archive_error_string(a));
  } catch (...) {
    archive_write_free(a);
    ::unlink(tmp.c_str());
    throw;
  }
  archive_write_free(a);
  struct stat st {};
  ::stat(tmp.c_str(), &st);
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + out, errno);
  }
  return static_cast<uint64_t>(st.st_size);
}

bool clocks_start_at_zero(const SandboxSpec& spec) {
  // gVisor's own kernel starts its monotonic and boot clocks with the sandbox.
  return spec.runtime == "gvisor" || runtime::wants_time_namespace(spec);
}

json make_header(const SandboxSpec& spec, const std::vector<std::string>& redact) {
  json s = spec::spec_to_json(spec);
  // Host-specific and sandbox-specific fields stay out: a replay or a branch
  // decides its own.
  for (const char* k : {"id", "name", "layer_dirs", "upper_dir"}) s.erase(k);
  if (s.contains("process") && s["process"].contains("env")) {
    json env = env_json(spec.process.env, redact);
    s["process"]["env"] = json::array();
    json redacted = json::array();
    for (const auto& e : env) {
      if (e.contains("value"))
        s["process"]["env"].push_back(e["name"].get<std::string>() + "=" + e["value"].get<std::string>());
      else
        redacted.push_back(e);
    }
    s["redacted_env"] = redacted;
  }
  json unpinned = json::array({"wall clock", "kernel randomness (/dev/urandom, getrandom)", "pids"});
  if (!clocks_start_at_zero(spec)) unpinned.push_back("monotonic and boot clocks (no time namespace)");
  json h = {{"format", "sbx-trajectory"},
            {"version", kFormatVersion},
            {"sbx_version", SBX_VERSION},
            {"image", {{"ref", spec.image_ref}, {"id", spec.image_id}}},
            {"runtime", spec.runtime},
            {"hostname", spec.hostname},
            {"network", s.contains("network") ? s["network"] : json()},
            {"redact", redact},
            {"timens", clocks_start_at_zero(spec)},
            {"unpinned", unpinned},
            {"created_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count()},
            {"spec", s}};
  return h;
}

ScratchDir::ScratchDir(const std::string& parent) {
  fs::mkdir_p(parent, 0711);
  std::string t = parent + "/.trajectory-XXXXXX";
  if (!::mkdtemp(t.data())) throw Error("cannot make a scratch dir in " + parent, errno);
  path = t;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  sfs::remove_all(path, ec);
}

void pin_reproducible(SandboxSpec& spec) {
  if (!spec.id.empty() && spec.hostname == spec.id.substr(0, 12)) spec.hostname = "sandbox";
  bool seed = false, epoch = false;
  for (const auto& e : spec.process.env) {
    if (e.rfind("PYTHONHASHSEED=", 0) == 0) seed = true;
    if (e.rfind("SOURCE_DATE_EPOCH=", 0) == 0) epoch = true;
  }
  if (!seed) spec.process.env.push_back("PYTHONHASHSEED=0");
  // Monotonic and boot clocks that start at zero (a time namespace), unless
  // the caller said otherwise (--no-timens: the annotation "false").
  spec.annotations.emplace(runtime::kTimeNamespaceAnnotation, "true");
  // The recording's own start (seconds): kept in the recorded spec's env, so
  // a replay or a branch gets the same value, and build tools that honour it
  // (reproducible-builds.org/specs/source-date-epoch) stamp the same times.
  if (!epoch)
    spec.process.env.push_back("SOURCE_DATE_EPOCH=" +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                  std::chrono::system_clock::now().time_since_epoch())
                                                  .count()));
}

}  // namespace sbx::engine::trajectory
