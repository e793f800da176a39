// Engine: `sbx replay` — a fresh sandbox from a trajectory's recorded image
// and spec, the recorded steps run again, each compared with its record.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/json_number.h"
#include "common/log.h"
#include "engine/recording.h"
#include "engine/trajectory_ops.h"
#include "oci/auth_config.h"
#include "oci/digest.h"

namespace sbx::engine::trajectory {

using json = nlohmann::json;
namespace sfs = std::filesystem;

namespace {

std::string read_memfd(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

Fd memfd(const char* name) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (fd.fd < 0) throw Error("cannot create a memfd for the replay", errno);
  return fd;
}

/// Drops every line matching one of `res` (with its newline).
std::string drop_lines(const std::string& s, const std::vector<std::regex>& res) {
  if (res.empty()) return s;
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    size_t end = nl == std::string::npos ? s.size() : nl + 1;
    std::string line = s.substr(pos, (nl == std::string::npos ? s.size() : nl) - pos);
    bool drop = false;
    for (const auto& r : res)
      if (std::regex_search(line, r)) drop = true;
    if (!drop) out += s.substr(pos, end - pos);
    pos = end;
  }
  return out;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 32 || c >= 127) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out += static_cast<char>(c);
  }
  return out;
}

/// "" when equal, else where they first differ and around it.
std::string first_difference(const std::string& stream, const std::string& want, const std::string& got,
                             bool want_complete) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  if (i == want.size() && i == got.size()) return "";
  if (i == want.size() && !want_complete)
    return stream + " differs after the " + std::to_string(want.size()) +
           " recorded bytes (only the digest of the rest was kept)";
  size_t from = i > 16 ? i - 16 : 0;
  return stream + " differs at byte " + std::to_string(i) + ": recorded \"" + printable(want.substr(from, 40)) +
         "\", now \"" + printable(got.substr(from, 40)) + "\"";
}

/// The last line of trajectory FILE as JSON (a replay's own last step);
/// null when it cannot be read. Reads from the end: a trajectory grows by a
/// step per replayed step, and re-reading it whole each time would cost its
/// square.
json last_line(const std::string& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) return nullptr;
  off_t size = ::lseek(fd.fd, 0, SEEK_END);
  for (off_t window = 1 << 20;; window *= 4) {
    off_t from = size > window ? size - window : 0;
    std::string buf(static_cast<size_t>(size - from), '\0');
    if (::pread(fd.fd, buf.data(), buf.size(), from) != static_cast<ssize_t>(buf.size())) return nullptr;
    if (!buf.empty() && buf.back() == '\n') buf.pop_back();
    size_t nl = buf.rfind('\n');
    if (nl == std::string::npos && from > 0) continue;
    try {
      return json::parse(nl == std::string::npos ? buf : buf.substr(nl + 1));
    } catch (const json::exception&) {
      return nullptr;
    }
  }
}

/// A checkpoint (docs/trajectory.md) as path → what a replay compares of
/// each changed entry: type, content digest, symlink target, mode, opaque;
/// a deletion as {"type": "deleted"}. Timestamps are left out.
/// Paths matching one of `skip` are left out.
std::map<std::string, json> change_set(const json& checkpoint, const std::vector<std::regex>& skip) {
  std::map<std::string, json> out;
  if (!checkpoint.is_object()) return out;
  auto skipped = [&](const std::string& path) {
    for (const auto& r : skip)
      if (std::regex_search(path, r)) return true;
    return false;
  };
  for (const auto& f : checkpoint.value("files", json::array()))
    if (!skipped(f.value("path", "")))
      out[f.value("path", "")] = {{"type", f.value("type", "")},
                                {"sha256", f.value("sha256", "")},
                                {"target", f.value("target", "")},
                                {"mode", f.value("mode", 0u)},
                                {"opaque", f.value("opaque", false)}};
  for (const auto& d : checkpoint.value("deleted", json::array()))
    if (d.is_string() && !skipped(d.get<std::string>())) out[d.get<std::string>()] = {{"type", "deleted"}};
  return out;
}

/// "" when a step changed the same files (change_set) in the record and in
/// the replay (paths matching one of `skip` left out); else the first few
/// that differ and how.
std::string files_difference(const json& recorded, const json& replayed, const std::vector<std::regex>& skip) {
  auto want = change_set(recorded, skip), got = change_set(replayed, skip);
  if (want == got) return "";
  std::vector<std::string> diffs;
  size_t count = 0;
  auto note = [&](const std::string& path, const std::string& how) {
    if (++count <= 5) diffs.push_back(path + " (" + how + ")");
  };
  for (const auto& [path, w] : want) {
    auto it = got.find(path);
    bool deleted = w["type"] == "deleted";
    if (it == got.end()) {
      note(path, deleted ? "deleted in the record, not now" : "changed in the record, not now");
      continue;
    }
    const json& g = it->second;
    if (w == g) continue;
    if (deleted || g["type"] == "deleted") note(path, deleted ? "deleted in the record, not now" : "deleted now, not in the record");
    else if (w["type"] != g["type"]) note(path, "a " + g["type"].get<std::string>() + " now, a " + w["type"].get<std::string>() + " in the record");
    else if (w["sha256"] != g["sha256"]) note(path, "other content");
    else if (w["target"] != g["target"]) note(path, "another link target");
    else if (w["mode"] != g["mode"]) note(path, "another mode");
    else note(path, "opaque on one side only");
  }
  for (const auto& [path, g] : got)
    if (!want.count(path)) note(path, g["type"] == "deleted" ? "deleted now, not in the record" : "changed now, not in the record");
  std::string out = "files differ: ";
  for (size_t i = 0; i < diffs.size(); ++i) out += (i ? ", " : "") + diffs[i];
  if (count > diffs.size()) out += " and " + std::to_string(count - diffs.size()) + " more";
  return out;
}

/// Each of `res` compiled (ECMAScript). Throws sbx::Error (InvalidArgument)
/// naming `option` for one that is not a regex.
std::vector<std::regex> regexes(const std::vector<std::string>& res, const char* option) {
  std::vector<std::regex> out;
  for (const auto& r : res) {
    try {
      out.emplace_back(r);
    } catch (const std::regex_error& e) {
      throw Error(ErrorKind::InvalidArgument, std::string(option) + " '" + r + "' is not a regex: " + e.what());
    }
  }
  return out;
}

}  // namespace

ReplayResult replay(Engine& engine, const ReplayRequest& req) {
  ScratchDir scratch(engine.config().run_root);
  Trajectory t = read(engine, req.source, scratch.path + "/src");
  std::vector<std::regex> tolerate = regexes(req.tolerate_regex, "--tolerate-regex");
  std::vector<std::regex> tolerate_path = regexes(req.tolerate_path, "--tolerate-path");
  int last = t.steps.empty() ? 0 : t.steps.back()["step"].get<int>();
  if (req.until < 0 || req.until > last)
    throw Error(ErrorKind::NotFound, "--until " + std::to_string(req.until) +
                                         " is out of range: the trajectory has steps 1.." + std::to_string(last));
  ReplayResult res;
  // The replay's sandbox records too: its own checkpoint of each step is
  // what the step's recorded checkpoint is compared with (the files it
  // changed). An imported trajectory has no checkpoints to compare.
  res.sandbox = create_from(engine, t.header, req.image, "", true, nullptr);
  if (req.on_created) req.on_created(res.sandbox);
  const std::string& run_root = engine.config().run_root;
  const std::string own = recorded(run_root, res.sandbox) ? dir_of(run_root, res.sandbox) + "/trajectory.jsonl" : "";
  // Files are compared until a step is not replayed as recorded (skipped,
  // or a branch's several copies): each checkpoint holds what changed since
  // the step before, so after such a step the two no longer line up.
  bool files_comparable = !own.empty();
  int own_last = 0;  // the replay's own last step compared
  auto compare_files = [&](const json& s, ReplayStep& rs) {
    if (!files_comparable || rs.result != "match" || !s.contains("checkpoint") || s.contains("not_restorable"))
      return;
    json mine = last_line(own);
    if (!mine.is_object() || mine.value("kind", "") != rs.kind || mine.value("step", 0) <= own_last ||
        !mine.contains("checkpoint") || mine.contains("not_restorable")) {
      files_comparable = false;  // the replay's step went unrecorded
      return;
    }
    own_last = mine.value("step", 0);
    std::string d = files_difference(s["checkpoint"], mine["checkpoint"], tolerate_path);
    if (!d.empty()) {
      rs.result = "differs";
      rs.difference = d;
    }
  };
  try {
    for (const auto& s : t.steps) {
      int n = s["step"].get<int>();
      if (req.until && n > req.until) break;
      ReplayStep rs;
      rs.step = n;
      rs.kind = s.value("kind", "");
      std::string kind = rs.kind;
      if (kind == "exec") {
        ExecRequest x;
        x.sandbox = res.sandbox;
        x.args = s.value("argv", std::vector<std::string>{});
        for (const auto& a : x.args) rs.what += (rs.what.empty() ? "" : " ") + a;
        for (const auto& e : s.value("env", json::array())) {
          if (e.contains("value"))
            x.env.push_back(e["name"].get<std::string>() + "=" + e["value"].get<std::string>());
          else
            rs.note = "env " + e.value("name", "") + " was recorded as a digest only; ";
        }
        x.cwd = s.value("workdir", "");
        x.user = s.value("user", "");
        x.forward_signals = false;
        // The reader (bad_step) refused a timeout_ms that is not an int64 >= 0.
        if (auto ms = json_number::to_int64(s.value("timeout_ms", json()))) x.timeout = std::chrono::milliseconds(*ms);
        Fd in, out = memfd("replay-stdout"), err = memfd("replay-stderr");
        const json& sin = s.value("stdin", json());
        if (sin.is_object()) {
          if (!sin.contains("data_b64") || sin.value("truncated", false)) {
            rs.result = "skipped";
            rs.note += "its stdin was not recorded in full";
            files_comparable = false;  // what later steps changed no longer lines up
            res.steps.push_back(rs);
            if (req.on_step) req.on_step(res.steps.back());
            continue;
          }
          in = memfd("replay-stdin");
          fs::write_all(in.fd, oci::base64_decode(sin["data_b64"].get<std::string>()), "the replay's stdin");
          ::lseek(in.fd, 0, SEEK_SET);
          x.stdin_fd = in.fd;
          x.interactive = true;
        }
        x.stdout_fd = out.fd;
        x.stderr_fd = err.fd;
        int code = engine.exec(x).exit_code;
        std::string diff;
        if (code != s.value("exit_code", 0))
          diff = "exit code " + std::to_string(code) + ", recorded " + std::to_string(s.value("exit_code", 0));
        for (const char* stream : {"stdout", "stderr"}) {
          if (!diff.empty() || !s.contains(stream) || s[stream].is_null()) continue;
          const json& rec = s[stream];
          std::string got = read_memfd(stream[3] == 'o' ? out.fd : err.fd);
          std::string want = oci::base64_decode(rec.value("data_b64", ""));
          bool complete = !rec.value("truncated", false);
          if (!tolerate.empty() && complete) {
            diff = first_difference(stream, drop_lines(want, tolerate), drop_lines(got, tolerate), true);
          } else if (oci::sha256_hex(got) != rec.value("sha256", "")) {
            diff = first_difference(stream, want, got, complete);
            if (diff.empty()) diff = std::string(stream) + " differs (its digest)";
          }
        }
        rs.result = diff.empty() ? "match" : "differs";
        rs.difference = diff;
        compare_files(s, rs);
      } else if (kind == "cp_in") {
        rs.what = "-> " + s.value("path", "");
        if (!s.value("content_stored", false)) {
          rs.result = "skipped";
          rs.note = "its content was not recorded (larger than the bound)";
          files_comparable = false;
        } else {
          std::string name = s.value("source_name", "");
          std::string base = scratch.path + "/cp-" + std::to_string(n);
          std::string host = (name.empty() || name == "." || name == "..") ? base + "/content" : base + "/" + name;
          std::map<std::string, json> state;
          for (const auto& f : s.value("manifest", json::array())) {
            std::string rel = f.value("path", "");
            state[rel.empty() ? "" : "/" + rel] = f;
          }
          // The manifest's root entry ("") is the copied file or directory itself.
          fs::mkdir_p(base, 0700);
          std::map<std::string, json> rooted;
          for (auto& [p, f] : state) rooted["/" + sfs::path(host).filename().string() + p] = f;
          materialize(rooted, t.objects_dir, base);
          std::string src = host;
          if (name.empty() || name == "." || name == "..") src = host + "/.";
          auto r = engine.copy_in(res.sandbox, src, s.value("path", ""));
          rs.result = r.bytes == s.value("size", 0ull) ? "match" : "differs";
          if (rs.result != "match")
            rs.difference = "copied " + std::to_string(r.bytes) + " bytes, recorded " +
                            std::to_string(s.value("size", 0ull));
          compare_files(s, rs);
        }
      } else if (kind == "cp_out") {
        rs.what = "<- " + s.value("path", "");
        std::string host = scratch.path + "/out-" + std::to_string(n);
        auto r = engine.copy_out(res.sandbox, s.value("path", ""), host);
        (void)r;
        // The recorder's own manifest of what arrived, hashed the same way.
        uint64_t total = 0;
        json files = copy_manifest(host, "", false, total);
        rs.result = oci::sha256_hex(files.dump()) == s.value("sha256", "") ? "match" : "differs";
        if (rs.result != "match") rs.difference = "the files copied out differ from the recorded ones";
      } else if (kind == "branch") {
        rs.what = "the parent's files";
        auto state = files_at(t, n);
        std::string files = scratch.path + "/branch-" + std::to_string(n);
        auto del = materialize(state, t.objects_dir, files);
        if (!del.empty()) {
          ExecRequest rm;
          rm.sandbox = res.sandbox;
          rm.args = {"rm", "-rf", "--"};
          rm.args.insert(rm.args.end(), del.begin(), del.end());
          rm.forward_signals = false;
          engine.exec(rm);
        }
        std::error_code ec;
        for (const auto& e : sfs::directory_iterator(files, ec)) engine.copy_in(res.sandbox, e.path().string(), "/");
        rs.result = "match";
      } else {
        rs.result = "skipped";
        rs.what = s.value("type", "") + " " + s.value("name", "");
        rs.note = "not re-taken";
      }
      res.steps.push_back(rs);
      if (req.on_step) req.on_step(res.steps.back());
      if (rs.result == "differs") {
        res.first_divergence = n;
        break;
      }
    }
  } catch (...) {
    if (!req.keep) {
      try {
        engine.remove(res.sandbox, true);
      } catch (const Error&) {
      }
    }
    throw;
  }
  if (!req.keep) {
    engine.remove(res.sandbox, true);
    res.sandbox.clear();
  }
  return res;
}

}  // namespace sbx::engine::trajectory
