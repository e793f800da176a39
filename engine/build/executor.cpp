// The build flow of engine/build/builder.h: stages, steps, cache, commits.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/units.h"
#include "engine/build/builder.h"
#include "engine/build/cache.h"
#include "engine/build/context.h"
#include "engine/build/dockerfile.h"
#include "engine/build/dockerignore.h"
#include "engine/build/expand.h"
#include "engine/build/layer_writer.h"
#include "engine/build/run_step.h"
#include "oci/commit.h"
#include "oci/digest.h"
#include "oci/http.h"
#include "oci/store.h"
#include "oci/tree.h"
#include "oci/unpack.h"
#include "runtime/linux/userns.h"
#include "snapshot/upper_to_layer.h"

namespace sbx::build {

namespace {

using json = nlohmann::json;

/// docker build's exit code for a failed step.
constexpr int kExitStepFailed = 1;
/// An interrupted build (128 + SIGINT, as a shell reports Ctrl-C).
constexpr int kExitInterrupted = 130;

const std::set<std::string>& proxy_args() {
  static const std::set<std::string> s = {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                                          "FTP_PROXY",  "ftp_proxy",  "NO_PROXY",    "no_proxy",
                                          "ALL_PROXY",  "all_proxy"};
  return s;
}

std::string host_arch() {
  struct utsname u;
  ::uname(&u);
  std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  if (m == "armv7l") return "arm";
  return m;
}

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  struct tm tm;
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
  return buf;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join_words(const std::vector<std::string>& v, const std::string& sep = " ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

/// The words of an instruction's arguments: its JSON form, or its text split
/// at unquoted blanks (quotes kept for the expansion to remove).
std::vector<std::string> raw_args(const Instruction& ins, char escape) {
  if (ins.json) return ins.json_args;
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;
  char quote = 0;
  const std::string& s = ins.rest;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == escape && quote == '"' && i + 1 < s.size()) {
        w += c;
        w += s[++i];
        continue;
      }
      if (c == quote) quote = 0;
      w += c;
      continue;
    }
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(w);
      w.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'' || c == '"') quote = c;
    if (c == escape && i + 1 < s.size()) {
      w += c;
      c = s[++i];
    }
    w += c;
  }
  if (in_word) words.push_back(w);
  return words;
}

/// NAME=VALUE pairs of ENV and LABEL (and the legacy "ENV NAME VALUE").
std::vector<std::pair<std::string, std::string>> name_values(const Instruction& ins, char escape) {
  std::vector<std::pair<std::string, std::string>> out;
  auto words = raw_args(ins, escape);
  if (words.empty()) return out;
  if (words[0].find('=') == std::string::npos) {
    size_t sp = ins.rest.find_first_of(" \t");
    std::string value = sp == std::string::npos ? "" : trim(ins.rest.substr(sp));
    out.emplace_back(words[0], value);
    return out;
  }
  for (const auto& w : words) {
    size_t eq = w.find('=');
    out.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  return out;
}

/// A RUN --mount=... value.
struct MountSpec {
  std::map<std::string, std::string> opts;
  std::string type = "bind";
};

MountSpec parse_mount(const std::string& text) {
  MountSpec m;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string kv = text.substr(i, j - i);
    i = j + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string k = lower(kv.substr(0, eq)), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (k == "type")
      m.type = v;
    else
      m.opts[k] = v;
  }
  return m;
}

std::string normalize_port(const std::string& p) {
  std::string port = p, proto = "tcp";
  size_t s = p.find('/');
  if (s != std::string::npos) {
    port = p.substr(0, s);
    proto = lower(p.substr(s + 1));
  }
  if (port.empty() || port.find_first_not_of("0123456789-") != std::string::npos ||
      (proto != "tcp" && proto != "udp" && proto != "sctp"))
    throw Error(ErrorKind::InvalidArgument, "invalid port '" + p + "': use PORT[/tcp|udp|sctp]");
  return port + "/" + proto;
}

bool is_url(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

bool is_git(const std::string& s) {
  return s.rfind("git@", 0) == 0 || s.rfind("git://", 0) == 0 ||
         (is_url(s) && (s.size() > 4 && s.compare(s.size() - 4, 4, ".git") == 0)) || s.find(".git#") != std::string::npos;
}

/// The archive type of the file at `path` that ADD extracts: "tar", "gzip",
/// "zstd", "bzip2", "xz", or "" for anything else.
std::string archive_kind(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) return "";
  unsigned char b[512] = {};
  ssize_t n = ::pread(f.fd, b, sizeof b, 0);
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return "gzip";
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return "zstd";
  if (n >= 3 && b[0] == 'B' && b[1] == 'Z' && b[2] == 'h') return "bzip2";
  if (n >= 6 && b[0] == 0xfd && b[1] == '7' && b[2] == 'z' && b[3] == 'X' && b[4] == 'Z' && b[5] == 0) return "xz";
  if (n >= 262 && std::string(reinterpret_cast<char*>(b) + 257, 5) == "ustar") return "tar";
  return "";
}

/// HTTP Last-Modified -> seconds since the epoch (0 when unreadable).
time_t parse_http_date(const std::string& s) {
  struct tm tm {};
  if (!::strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm)) return 0;
  return ::timegm(&tm);
}

/// What one stage has built so far.
struct StageState {
  std::string image_id;             ///< current image; "" while nothing is committed (scratch)
  json config;                      ///< the whole image config
  std::vector<std::string> layers;  ///< layer dirs, bottom first
  std::string key;                  ///< cache key after the last step
  Vars args;                        ///< ARGs in scope with a value
  bool cmd_set = false;             ///< CMD given in this stage (ENTRYPOINT then keeps it)
};

/// The result of a finished stage.
struct StageResult {
  std::string image_id;
  std::vector<std::string> layers;
  json config;
};

class Executor {
 public:
  Executor(const std::string& root, const std::string& run_root, const BuildOptions& o)
      : o_(o), run_root_(run_root), store_(root), cache_(store_) {}

  BuildResult run();

 private:
  // Setup.
  void make_tmp();
  void prepare_context();
  std::string read_dockerfile(std::string& name);
  std::vector<size_t> needed_stages(const StagePlan& plan, size_t target);
  long stage_ref(const StagePlan& plan, const std::string& ref, size_t before) const;

  // Stages and steps.
  StageResult build_stage(const StagePlan& plan, const Stage& st);
  void emit(BuildEvent::Kind k, const std::string& text = "", double seconds = 0);
  Vars vars(const StageState& s) const;
  std::string expand(const StageState& s, const std::string& in, std::set<std::string>* used = nullptr) const;
  json& cfg(StageState& s);
  std::vector<std::string> env_of(StageState& s);
  void set_env(StageState& s, const std::string& k, const std::string& v);
  void commit(StageState& s, const std::string& created_by, const std::string& layer_tar,
              const std::string& layer_hex, const std::string& key);
  bool try_cache(StageState& s, const std::string& key);
  void load_image(StageState& s, const oci::ImageRecord& rec);
  std::string next_tmp(const std::string& what);

  void do_run(StageState& s, const Instruction& ins, const std::string& key_base);
  void do_copy(StageState& s, const Instruction& ins, bool add);
  void do_workdir(StageState& s, const Instruction& ins);
  void do_config(StageState& s, const Instruction& ins);
  std::string shell_form(StageState& s, const Instruction& ins, std::vector<std::string>& args);

  void check_cancel(const Instruction* ins) const {
    if (o_.cancelled && o_.cancelled())
      throw Error(ins ? at(df_, *ins, "build interrupted") : std::string("build interrupted"), EINTR, kExitInterrupted);
  }
  [[noreturn]] void fail(const Instruction& ins, const std::string& msg, int code = kExitSbxFailed) const {
    throw Error(at(df_, ins, msg), 0, code);
  }

  const BuildOptions& o_;
  std::string run_root_;
  oci::Store store_;
  BuildCache cache_;
  std::string tmp_;          ///< ROOT/tmp/.build-XXXXXX, removed at the end
  int tmp_n_ = 0;
  std::string context_dir_;  ///< the context on disk
  IgnoreMatcher ignore_;
  Dockerfile df_;
  std::string arch_ = host_arch();
  Vars global_args_;                     ///< ARGs before FROM, with values
  std::set<std::string> global_declared_;
  std::set<std::string> consumed_;       ///< build args some ARG used
  std::map<size_t, StageResult> done_;   ///< built stages by index
  const StagePlan* plan_ = nullptr;
  // The step being run (events).
  std::string ev_stage_;
  int ev_step_ = 0, ev_steps_ = 0;
  int steps_ = 0, cached_ = 0;
};

void Executor::emit(BuildEvent::Kind k, const std::string& text, double seconds) {
  if (!o_.on_event) return;
  BuildEvent e;
  e.kind = k;
  e.stage = ev_stage_;
  e.step = ev_step_;
  e.steps = ev_steps_;
  e.text = text;
  e.seconds = seconds;
  o_.on_event(e);
}

void Executor::make_tmp() {
  fs::mkdir_p(store_.root() + "/tmp", 0700);
  std::string t = store_.root() + "/tmp/.build-XXXXXX";
  if (!::mkdtemp(t.data())) throw_errno("create a temp dir in " + store_.root() + "/tmp");
  tmp_ = t;
}

std::string Executor::next_tmp(const std::string& what) {
  std::string d = tmp_ + "/" + what + "-" + std::to_string(++tmp_n_);
  if (::mkdir(d.c_str(), 0700) < 0) throw_errno("create " + d);
  return d;
}

void Executor::prepare_context() {
  if (!o_.context_dir.empty() && !o_.context_tar.empty())
    throw Error("sbx build: give the context as a directory or a tar, not both");
  if (!o_.context_dir.empty()) {
    char* real = ::realpath(o_.context_dir.c_str(), nullptr);
    if (!real) throw_errno("the build context " + o_.context_dir);
    context_dir_ = real;
    ::free(real);
    struct stat st;
    if (::stat(context_dir_.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
      throw Error("the build context " + o_.context_dir + " is not a directory");
    return;
  }
  context_dir_ = next_tmp("context");
  if (o_.context_tar.empty()) return;  // an empty context (a Dockerfile alone)
  try {
    oci::unpack_layer(o_.context_tar, context_dir_, {}, {}, o_.context_limits);
  } catch (const Error& e) {
    throw Error(ErrorKind::InvalidArgument, std::string("the build context tar cannot be unpacked (a tar, plain, gzip or zstd, whose paths "
                            "stay inside it): ") + e.what());
  }
}

std::string Executor::read_dockerfile(std::string& name) {
  if (o_.has_dockerfile_text) {
    name = o_.dockerfile.empty() ? "Dockerfile" : o_.dockerfile;
    return o_.dockerfile_text;
  }
  name = o_.dockerfile.empty() ? "Dockerfile" : o_.dockerfile;
  std::string path = name[0] == '/' ? name : context_dir_ + "/" + name;
  if (name[0] != '/') {
    // Inside the context: resolved there, never followed out of it.
    RootfsView v({context_dir_}, true);
    auto r = v.resolve(name, true, true);
    if (!r.entry || !S_ISREG(r.entry->st.st_mode))
      throw Error(ErrorKind::NotFound, "cannot read the Dockerfile: " + name + " not found in the build context" +
                  (o_.context_dir.empty() ? "" : " " + context_dir_));
    path = r.entry->host_path;
  }
  try {
    return fs::read_file(path);
  } catch (const Error& e) {
    throw Error(std::string("cannot read the Dockerfile: ") + e.what());
  }
}

long Executor::stage_ref(const StagePlan& plan, const std::string& ref, size_t before) const {
  std::string l = lower(ref);
  for (size_t i = 0; i < before && i < plan.stages.size(); ++i)
    if (plan.stages[i].name == l) return static_cast<long>(i);
  if (!ref.empty() && ref.size() <= 9 && ref.find_first_not_of("0123456789") == std::string::npos) {
    long n = std::stol(ref);
    if (n >= 0 && static_cast<size_t>(n) < before) return n;
  }
  return -1;
}

std::vector<size_t> Executor::needed_stages(const StagePlan& plan, size_t target) {
  std::set<size_t> need;
  std::vector<size_t> todo{target};
  Expander e;
  e.vars = &global_args_;
  e.escape = df_.escape;
  while (!todo.empty()) {
    size_t i = todo.back();
    todo.pop_back();
    if (!need.insert(i).second) continue;
    const Stage& st = plan.stages[i];
    auto from_words = raw_args(*st.from, df_.escape);
    std::string base;
    try {
      base = e.word(from_words.empty() ? "" : from_words[0]);
    } catch (const Error& err) {
      fail(*st.from, err.what());
    }
    long b = stage_ref(plan, base, i);
    if (b >= 0 && plan.stages[static_cast<size_t>(b)].name == lower(base)) todo.push_back(static_cast<size_t>(b));
    for (const auto* ins : st.body) {
      std::vector<std::string> refs;
      if (ins->keyword == "COPY")
        for (const auto& f : ins->flag_values("from")) refs.push_back(f);
      if (ins->keyword == "RUN")
        for (const auto& m : ins->flag_values("mount")) {
          auto ms = parse_mount(m);
          if (ms.opts.count("from")) refs.push_back(ms.opts["from"]);
        }
      for (const auto& r : refs) {
        std::string v;
        try {
          v = e.word(r);
        } catch (const Error&) {
          continue;  // uses a stage ARG: not a stage name
        }
        long s = stage_ref(plan, v, i);
        if (s >= 0) todo.push_back(static_cast<size_t>(s));
        else if (stage_ref(plan, v, plan.stages.size()) >= 0)
          fail(*ins, "--from=" + v + " names a stage defined later; a stage can only use the ones before it");
      }
    }
  }
  return std::vector<size_t>(need.begin(), need.end());
}

Vars Executor::vars(const StageState& s) const {
  Vars v = s.args;
  const json* c = s.config.contains("config") ? &s.config["config"] : nullptr;
  if (c && c->is_object() && c->contains("Env") && (*c)["Env"].is_array())
    for (const auto& e : (*c)["Env"]) {
      if (!e.is_string()) continue;
      std::string kv = e.get<std::string>();
      size_t eq = kv.find('=');
      v[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  return v;
}

std::string Executor::expand(const StageState& s, const std::string& in, std::set<std::string>* used) const {
  Vars v = vars(s);
  Expander e;
  e.vars = &v;
  e.escape = df_.escape;
  e.used = used;
  return e.word(in);
}

json& Executor::cfg(StageState& s) {
  if (!s.config.contains("config") || !s.config["config"].is_object()) s.config["config"] = json::object();
  return s.config["config"];
}

std::vector<std::string> Executor::env_of(StageState& s) {
  std::vector<std::string> env;
  json& c = cfg(s);
  if (c.contains("Env") && c["Env"].is_array())
    for (const auto& e : c["Env"])
      if (e.is_string()) env.push_back(e.get<std::string>());
  return env;
}

void Executor::set_env(StageState& s, const std::string& k, const std::string& v) {
  json& c = cfg(s);
  if (!c.contains("Env") || !c["Env"].is_array()) c["Env"] = json::array();
  for (auto& e : c["Env"])
    if (e.is_string() && e.get<std::string>().compare(0, k.size() + 1, k + "=") == 0) {
      e = k + "=" + v;
      return;
    }
  c["Env"].push_back(k + "=" + v);
}

void Executor::load_image(StageState& s, const oci::ImageRecord& rec) {
  s.image_id = rec.id;
  s.layers = store_.layer_dirs(rec);
  try {
    s.config = json::parse(oci::image_config_json(store_, rec));
  } catch (const json::exception& e) {
    throw Error("image " + rec.id.substr(0, 12) + " has a malformed config: " + e.what());
  }
}

bool Executor::try_cache(StageState& s, const std::string& key) {
  s.key = key;
  if (o_.no_cache) return false;
  auto rec = cache_.lookup(key);
  if (!rec) return false;
  load_image(s, *rec);
  ++cached_;
  return true;
}

void Executor::commit(StageState& s, const std::string& created_by, const std::string& layer_tar,
                      const std::string& layer_hex, const std::string& key) {
  const std::string created = now_rfc3339();
  s.config["created"] = created;
  if (!s.config.contains("history") || !s.config["history"].is_array()) s.config["history"] = json::array();
  json h = {{"created", created}, {"created_by", created_by}, {"comment", "sbx build"}};
  if (layer_tar.empty()) h["empty_layer"] = true;
  s.config["history"].push_back(h);
  if (!layer_tar.empty()) {
    if (!s.config.contains("rootfs") || !s.config["rootfs"].is_object())
      s.config["rootfs"] = {{"type", "layers"}, {"diff_ids", json::array()}};
    s.config["rootfs"]["diff_ids"].push_back("sha256:" + layer_hex);
  }
  oci::ImageCommit c;
  c.parent = s.image_id;
  c.layer_tar = layer_tar;
  c.layer_hex = layer_hex;
  c.config_json = s.config.dump();
  c.build_cache = true;
  oci::ImageRecord rec = oci::commit_image(store_, c);
  s.image_id = rec.id;
  s.layers = store_.layer_dirs(rec);
  s.key = key;
  cache_.store(key, rec.id);
}

std::string Executor::shell_form(StageState& s, const Instruction& ins, std::vector<std::string>& args) {
  std::vector<std::string> shell = {"/bin/sh", "-c"};
  json& c = cfg(s);
  if (c.contains("Shell") && c["Shell"].is_array() && !c["Shell"].empty()) {
    shell.clear();
    for (const auto& x : c["Shell"])
      if (x.is_string()) shell.push_back(x.get<std::string>());
    if (shell.empty()) shell = {"/bin/sh", "-c"};
  }
  std::string script = ins.rest;
  if (!ins.heredocs.empty()) {
    // Here-documents go to the shell as written: it reads them itself.
    for (const auto& h : ins.heredocs) script += "\n" + h.content + h.name;
  }
  args = shell;
  args.push_back(script);
  return script;
}

void Executor::do_run(StageState& s, const Instruction& ins, const std::string& key_base) {
  // The command.
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> files;  // written in /dev/shm (not in the layer)
  if (ins.json) {
    args = ins.json_args;
    if (args.empty()) fail(ins, "RUN requires at least one argument");
  } else if (ins.heredocs.size() == 1 && trim(ins.rest).find("<<") == 0 &&
             raw_args(ins, df_.escape).size() == 1) {
    // RUN <<EOF … EOF: the body is the script; a #! line names its interpreter.
    const Heredoc& h = ins.heredocs[0];
    if (h.content.rfind("#!", 0) == 0) {
      std::string first = h.content.substr(2, h.content.find('\n') - 2);
      std::vector<std::string> interp;
      size_t i = 0;
      while (i < first.size()) {
        size_t b = first.find_first_not_of(" \t", i);
        if (b == std::string::npos) break;
        size_t e = first.find_first_of(" \t", b);
        interp.push_back(first.substr(b, e == std::string::npos ? std::string::npos : e - b));
        i = e == std::string::npos ? first.size() : e;
      }
      if (interp.empty()) fail(ins, "RUN here-document: the #! line names no interpreter");
      const std::string path = "/dev/shm/.sbx-build-script";
      files.emplace_back(path, h.content);
      args = interp;
      args.push_back(path);
    } else {
      std::vector<std::string> shell;
      shell_form(s, ins, shell);
      shell.back() = h.content;
      args = shell;
    }
  } else {
    shell_form(s, ins, args);
  }

  // The network of this step, and its mounts.
  NetworkMode net = o_.network;
  std::string netflag = expand(s, ins.flag("network"));
  if (netflag == "none")
    net = NetworkMode::None;
  else if (netflag == "host")
    net = NetworkMode::Host;
  else if (!netflag.empty() && netflag != "default")
    fail(ins, "RUN --network=" + netflag + ": use default, none or host");
  std::vector<Mount> mounts;
  std::vector<std::string> mount_points;
  std::string mounts_key;
  for (const auto& raw : ins.flag_values("mount")) {
    std::string text;
    try {
      text = expand(s, raw);
    } catch (const Error& e) {
      fail(ins, std::string("RUN --mount: ") + e.what());
    }
    MountSpec m = parse_mount(text);
    std::string target = m.opts.count("target")   ? m.opts["target"]
                         : m.opts.count("dst")    ? m.opts["dst"]
                         : m.opts.count("destination") ? m.opts["destination"]
                                                       : "";
    if (!target.empty() && target[0] != '/') {
      std::string wd = cfg(s).value("WorkingDir", std::string("/"));
      target = clean_path((wd.empty() ? "/" : wd) + "/" + target);
    }
    if (m.type == "cache") {
      if (target.empty()) fail(ins, "RUN --mount=type=cache needs target=PATH");
      std::string id = m.opts.count("id") ? m.opts["id"] : target;
      // One directory per id, shared by every build on this store; owned by
      // an unprivileged id so that the step's root writes as it (the
      // volume rules of runtime/linux/userns.h).
      std::string dir = store_.root() + "/build-mounts/" + oci::sha256_hex(id).substr(0, 32);
      if (!fs::exists(dir)) {
        fs::mkdir_p(store_.root() + "/build-mounts", 0700);
        std::string t = dir + ".new";
        oci::remove_tree(t);
        if (::mkdir(t.c_str(), 0755) < 0) throw_errno("create the cache mount " + t);
        if (::chown(t.c_str(), runtime::kVolumeIdBase, runtime::kVolumeIdBase) < 0) throw_errno("chown " + t);
        if (::rename(t.c_str(), dir.c_str()) < 0 && errno != EEXIST && errno != ENOTEMPTY)
          throw_errno("create the cache mount " + dir);
      }
      Mount mt{target, "bind", dir, {"rbind"}};
      if (m.opts.count("readonly") || m.opts.count("ro")) mt.options.push_back("ro");
      mounts.push_back(mt);
      mount_points.push_back(target);
      mounts_key += "cache:" + id + ">" + target + ";";
    } else if (m.type == "secret") {
      std::string id = m.opts.count("id") ? m.opts["id"] : "";
      if (id.empty() && !target.empty()) id = target.substr(target.rfind('/') + 1);
      if (id.empty()) fail(ins, "RUN --mount=type=secret needs id=ID (given with --secret id=ID,src=FILE)");
      if (target.empty()) target = "/run/secrets/" + id;
      auto it = o_.secrets.find(id);
      if (it == o_.secrets.end()) {
        if (m.opts.count("required") && m.opts["required"] != "false")
          fail(ins, "secret '" + id + "' is required: give it with --secret id=" + id + ",src=FILE");
        continue;
      }
      // A copy readable inside the sandbox; bound read-only, never in a layer.
      std::string dir = next_tmp("secret");
      std::string copy = dir + "/" + std::to_string(mounts.size());
      std::string content = fs::read_file(it->second);
      Fd f(::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400));
      if (f.fd < 0) throw_errno("write " + copy);
      fs::write_all(f.fd, content, copy);
      ::fchmod(f.fd, 0444);
      ::chmod(dir.c_str(), 0755);
      mounts.push_back(Mount{target, "bind", copy, {"bind", "ro", "nosuid", "nodev", "noexec"}});
      mount_points.push_back(target);
      mounts_key += "secret:" + id + ">" + target + ";";
    } else if (m.type == "tmpfs") {
      if (target.empty()) fail(ins, "RUN --mount=type=tmpfs needs target=PATH");
      Mount mt{target, "tmpfs", "tmpfs", {"nosuid", "nodev"}};
      if (m.opts.count("size")) mt.options.push_back("size=" + m.opts["size"]);
      mounts.push_back(mt);
      mount_points.push_back(target);
      mounts_key += "tmpfs:" + target + ";";
    } else if (m.type == "bind") {
      if (target.empty()) fail(ins, "RUN --mount=type=bind needs target=PATH");
      if (m.opts.count("rw") || m.opts.count("readwrite"))
        fail(ins, "RUN --mount=type=bind,rw is not supported by sbx build; bind mounts are read-only");
      std::string source = m.opts.count("source") ? m.opts["source"] : m.opts.count("src") ? m.opts["src"] : "/";
      if (m.opts.count("from")) {
        long st = stage_ref(*plan_, m.opts["from"], plan_->stages.size());
        if (st < 0) fail(ins, "RUN --mount=type=bind,from=" + m.opts["from"] + ": only the build context and "
                              "earlier stages can be bound; use COPY --from for an image");
        // A stage's tree is layers: its files are copied into a temp dir that is bound.
        const StageResult& r = done_.at(static_cast<size_t>(st));
        std::vector<std::string> top_first(r.layers.rbegin(), r.layers.rend());
        SourceTree tree = SourceTree::layers(top_first, "stage " + m.opts["from"]);
        std::string dir = next_tmp("bind");
        LayerWriter w(dir, {});
        CopyAttrs a;
        a.keep_owner = true;
        for (const auto& match : tree.sources(source))
          w.copy(tree, match, S_ISDIR(match.entry.st.st_mode) ? "/" : "/" + match.name, a);
        w.finish();
        std::string src = dir;
        auto only = tree.sources(source);
        if (only.size() == 1 && !S_ISDIR(only[0].entry.st.st_mode)) src = dir + "/" + only[0].name;
        ::chmod(dir.c_str(), 0755);
        mounts.push_back(Mount{target, "bind", src, {"rbind", "ro"}});
        mounts_key += "bind:" + r.image_id + ":" + source + ">" + target + ";";
      } else {
        SourceTree tree = SourceTree::context(context_dir_, ignore_);
        auto matches = tree.sources(source);
        if (matches.size() != 1) fail(ins, "RUN --mount=type=bind,source=" + source + ": names more than one path");
        mounts.push_back(Mount{target, "bind", matches[0].entry.host_path, {"rbind", "ro"}});
        mounts_key += "bind:context:" + source + ":" + tree.digest(matches) + ">" + target + ";";
      }
      mount_points.push_back(target);
    } else {
      fail(ins, "RUN --mount=type=" + m.type + " is not supported by sbx build (cache, secret, bind, tmpfs are)");
    }
  }

  // The environment: the image's, then the ARGs in scope that ENV does not set.
  std::vector<std::string> env = env_of(s);
  std::set<std::string> env_keys;
  for (const auto& e : env) env_keys.insert(e.substr(0, e.find('=')));
  std::vector<std::string> arg_env;
  for (const auto& [k, v] : s.args)
    if (!env_keys.count(k)) {
      env.push_back(k + "=" + v);
      if (!proxy_args().count(k)) arg_env.push_back(k + "=" + v);
    }
  if (!env_keys.count("PATH")) env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");

  std::string shown = ins.json ? join_words(args) : join_words(args);
  std::string created_by = "RUN " + (arg_env.empty() ? "" : "|" + std::to_string(arg_env.size()) + " " +
                                                               join_words(arg_env) + " ") +
                           shown;
  CacheKey k = CacheKey::after(key_base);
  k.add("RUN", join_words(args, std::string(1, '\0')));
  k.add("args", join_words(arg_env, std::string(1, '\0')));
  k.add("network", std::to_string(static_cast<int>(net)));
  k.add("mounts", mounts_key);
  for (const auto& [p, c] : files) k.add("file " + p, c);
  const std::string key = k.hex();
  if (try_cache(s, key)) return emit(BuildEvent::Kind::Cached);

  std::string dir = next_tmp("run");
  RunStep step;
  step.image_id = s.image_id;
  step.layer_dirs = s.layers;
  if (step.layer_dirs.empty()) step.layer_dirs.push_back(next_tmp("empty"));  // FROM scratch
  step.upper_dir = dir + "/fs";
  step.args = args;
  step.env = env;
  step.workdir = cfg(s).value("WorkingDir", std::string("/"));
  if (step.workdir.empty()) step.workdir = "/";
  step.user = cfg(s).value("User", std::string());
  step.network = net;
  step.mounts = mounts;
  step.run_root = run_root_;
  step.forward_signals = o_.forward_signals;
  step.files = files;  // (/dev/shm is the sandbox's own tmpfs: not in the layer)
  RunStepResult r =
      run_step(step, [&](const char* p, size_t n) { emit(BuildEvent::Kind::Output, std::string(p, n)); });
  if (r.status.forwarded_signal == SIGINT || r.status.forwarded_signal == SIGTERM || r.status.forwarded_signal == SIGHUP)
    throw Error(at(df_, ins, "build interrupted (signal " + std::to_string(r.status.forwarded_signal) +
                                 ") while RUN " + trim(ins.json ? join_words(args) : ins.rest) + " ran"),
                EINTR, kExitInterrupted);
  check_cancel(&ins);
  if (r.status.exit_code != 0 || r.status.signal) {
    std::string why = r.status.oom_killed ? " (killed: out of memory)" : r.status.signal ? " (killed by signal " + std::to_string(r.status.signal) + ")" : "";
    fail(ins, "RUN " + trim(ins.json ? join_words(args) : ins.rest) + " returned a non-zero code: " +
                  std::to_string(r.status.exit_code) + why,
         kExitStepFailed);
  }
  const std::string upper = step.upper_dir + "/upper";
  RootfsView image_view(std::vector<std::string>(s.layers.rbegin(), s.layers.rend()));
  scrub_upper(upper, mount_points, [&](const std::string& p) { return image_view.lookup(p).has_value(); });
  bool changed = false;
  {
    LayerWriter probe(upper, {});
    changed = !probe.empty();
  }
  if (!changed) {
    commit(s, created_by, "", "", key);
    return;
  }
  std::string tar = dir + "/layer.tar";
  snapshot::LayerTar lt = snapshot::upper_to_layer(upper, tar, r.uid_map, r.gid_map);
  commit(s, created_by, tar, lt.digest_hex, key);
  oci::remove_tree(dir);
}

void Executor::do_copy(StageState& s, const Instruction& ins, bool add) {
  const char* kw = add ? "ADD" : "COPY";
  auto words = raw_args(ins, df_.escape);
  std::set<std::string> used;
  auto x = [&](const std::string& w) {
    try {
      return expand(s, w, &used);
    } catch (const Error& e) {
      fail(ins, std::string(kw) + ": " + e.what());
    }
  };
  if (!ins.flag_values("keep-git-dir").empty()) fail(ins, "ADD of a git repository is not supported by sbx build");
  std::string from = ins.flag("from");
  std::string chown = x(ins.flag("chown")), chmod_text = x(ins.flag("chmod"));
  std::string checksum = x(ins.flag("checksum"));
  from = x(from);
  std::string dest = ins.json ? x(words.back()) : x(words.back());
  words.pop_back();
  const std::string wd = cfg(s).value("WorkingDir", std::string("/"));
  bool dest_dir = !dest.empty() && (dest.back() == '/' || dest == "." || dest == ".." ||
                                    (dest.size() >= 2 && dest.compare(dest.size() - 2, 2, "/.") == 0));
  if (dest.empty() || dest[0] != '/') dest = (wd.empty() ? "/" : wd) + "/" + dest;
  dest = clean_path(dest);

  // Where the sources come from.
  std::optional<SourceTree> tree;
  std::string from_id = "context";
  if (from.empty()) {
    tree = SourceTree::context(context_dir_, ignore_);
  } else {
    long st = stage_ref(*plan_, from, plan_->stages.size());
    if (st >= 0) {
      auto it = done_.find(static_cast<size_t>(st));
      if (it == done_.end()) fail(ins, "--from=" + from + ": that stage comes later; use an earlier one");
      from_id = "stage:" + it->second.image_id;
      tree = SourceTree::layers(std::vector<std::string>(it->second.layers.rbegin(), it->second.layers.rend()),
                                "stage " + from);
    } else {
      oci::ImageRecord img;
      try {
        img = oci::resolve_or_pull(store_, from, o_.pull, o_.pull_explicit, o_.pull_options);
      } catch (const Error& e) {
        fail(ins, std::string("--from=") + from + ": not a stage of this Dockerfile, and not an image: " + e.what());
      }
      from_id = "image:" + img.id;
      auto l = store_.layer_dirs(img);
      tree = SourceTree::layers(std::vector<std::string>(l.rbegin(), l.rend()), "image " + from);
    }
  }

  // The sources, each as matches of the tree, a here-document or a download.
  struct Src {
    std::string arg;
    std::vector<SourceTree::Match> matches;
    const Heredoc* heredoc = nullptr;
    std::string content;      ///< heredoc body (expanded)
    std::string file;         ///< a downloaded file
    std::string file_name;
    time_t mtime = 0;
  };
  std::vector<Src> srcs;
  size_t heredoc_i = 0;
  CacheKey k = CacheKey::after(s.key);
  k.add(kw, "");
  for (const auto& w : words) {
    Src src;
    src.arg = w;
    if (!ins.json && w.rfind("<<", 0) == 0 && heredoc_i < ins.heredocs.size()) {
      src.heredoc = &ins.heredocs[heredoc_i++];
      src.content = src.heredoc->content;
      if (src.heredoc->expand) {
        Vars v = vars(s);
        Expander e;
        e.vars = &v;
        e.skip_quotes = true;
        try {
          src.content = e.word(src.content);
        } catch (const Error& err) {
          fail(ins, std::string(kw) + " <<" + src.heredoc->name + ": " + err.what());
        }
      }
      k.add("heredoc " + src.heredoc->name, src.content);
      srcs.push_back(std::move(src));
      continue;
    }
    std::string p = x(w);
    if (add && is_git(p)) fail(ins, "ADD " + p + ": adding a git repository is not supported by sbx build");
    if (add && is_url(p)) {
      if (!from.empty()) fail(ins, "ADD does not take --from");
      NetworkMode net = o_.network;
      if (net == NetworkMode::None)
        fail(ins, "ADD " + p + ": the build's network is none; build with --network private or host to download");
      if (!oci::http::available()) fail(ins, "ADD " + p + ": this sbx was built without libcurl and cannot download");
      src.file = next_tmp("download") + "/file";
      Fd f(::open(src.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (f.fd < 0) throw_errno("create " + src.file);
      oci::Sha256 h;
      oci::http::Session session;
      oci::http::Request req;
      req.url = p;
      req.sink = [&](std::string_view b) {
        h.update(b);
        fs::write_all(f.fd, b, src.file);
      };
      oci::http::Response resp;
      try {
        resp = session.perform(req);
      } catch (const Error& e) {
        fail(ins, "ADD " + p + ": download failed: " + e.what());
      }
      if (resp.status < 200 || resp.status >= 300)
        fail(ins, "ADD " + p + ": the server answered HTTP " + std::to_string(resp.status));
      std::string digest = "sha256:" + h.hex();
      if (!checksum.empty() && checksum != digest)
        fail(ins, "ADD " + p + ": checksum mismatch: expected " + checksum + ", got " + digest);
      if (auto it = resp.headers.find("last-modified"); it != resp.headers.end()) src.mtime = parse_http_date(it->second);
      std::string path = p.substr(p.find("://") + 3);
      path = path.substr(0, path.find_first_of("?#"));
      size_t slash = path.rfind('/');
      src.file_name = slash == std::string::npos || slash + 1 == path.size() ? "" : path.substr(slash + 1);
      if (src.file_name.empty() && dest_dir)
        fail(ins, "ADD " + p + ": cannot name the file from the URL; give a destination file path");
      k.add("url " + p, digest);
      srcs.push_back(std::move(src));
      continue;
    }
    if (!checksum.empty()) fail(ins, "ADD --checksum is only for URLs");
    try {
      src.matches = tree->sources(p);
    } catch (const Error& e) {
      fail(ins, std::string(kw) + " failed: " + e.what());
    }
    k.add("source " + p, tree->is_context() ? tree->digest(src.matches) : from_id);
    srcs.push_back(std::move(src));
  }
  size_t total = 0;
  for (const auto& s2 : srcs) total += s2.heredoc || !s2.file.empty() ? 1 : s2.matches.size();
  if ((words.size() > 1 || total > 1) && !dest_dir)
    fail(ins, std::string("When using ") + kw +
                  " with more than one source file, the destination must be a directory and end with a /");
  k.add("from", from_id).add("chown", chown).add("chmod", chmod_text).add("dest", dest + (dest_dir ? "/" : ""));
  std::string created_by = std::string(kw) + " " + trim(ins.json ? join_words(ins.json_args) : ins.rest);
  const std::string key = k.hex();
  if (try_cache(s, key)) return emit(BuildEvent::Kind::Cached);

  std::string dir = next_tmp("copy");
  std::string staging = dir + "/upper";
  if (::mkdir(staging.c_str(), 0755) < 0) throw_errno("create " + staging);
  LayerWriter w(staging, std::vector<std::string>(s.layers.rbegin(), s.layers.rend()));
  CopyAttrs a;
  if (!chown.empty()) {
    try {
      auto [u, g] = resolve_chown(chown, w.view());
      a.uid = u;
      a.gid = g;
    } catch (const Error& e) {
      fail(ins, e.what());
    }
  }
  if (!chmod_text.empty()) {
    try {
      a.chmod = parse_chmod(chmod_text);
    } catch (const Error& e) {
      fail(ins, e.what());
    }
  }
  a.keep_owner = !from.empty();
  try {
    auto target_of = [&](const std::string& name, bool is_dir_source) {
      auto r = w.resolve(dest);
      if (is_dir_source) return r.path;
      if (dest_dir || (r.entry && S_ISDIR(r.entry->st.st_mode)))
        return (r.path == "/" ? "" : r.path) + "/" + name;
      return r.path;
    };
    for (const auto& src : srcs) {
      if (src.heredoc) {
        w.write_file(target_of(src.heredoc->name, false), src.content, a);
        continue;
      }
      if (!src.file.empty()) {
        w.write_file(target_of(src.file_name, false), fs::read_file(src.file), a, 0600, src.mtime);
        continue;
      }
      for (const auto& m : src.matches) {
        const bool is_dir = S_ISDIR(m.entry.st.st_mode);
        if (add && !is_dir && S_ISREG(m.entry.st.st_mode) && from.empty()) {
          std::string kind = archive_kind(m.entry.host_path);
          if (kind == "bzip2" || kind == "xz")
            fail(ins, "ADD " + src.arg + ": a " + kind +
                          " archive; sbx build extracts tar archives plain, gzip- or zstd-compressed only");
          if (!kind.empty()) {
            // A local archive: its content goes into the destination directory.
            std::string x_dir = next_tmp("extract");
            try {
              oci::unpack_layer(m.entry.host_path, x_dir);
            } catch (const Error& e) {
              fail(ins, "ADD " + src.arg + ": cannot extract the archive: " + e.what());
            }
            SourceTree xt = SourceTree::layers({x_dir}, "archive " + src.arg);
            auto root = xt.sources("/");
            CopyAttrs xa = a;
            xa.keep_owner = true;
            w.copy(xt, root[0], w.resolve(dest).path, xa);
            continue;
          }
        }
        w.copy(*tree, m, target_of(m.name.empty() ? "" : m.name, is_dir), a);
      }
    }
    w.finish();
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(df_.path + ":", 0) == 0) throw;
    fail(ins, std::string(kw) + " failed: " + msg);
  }
  if (w.empty()) {
    commit(s, created_by, "", "", key);
  } else {
    std::string tar = dir + "/layer.tar";
    snapshot::LayerTar lt = snapshot::upper_to_layer(staging, tar);
    commit(s, created_by, tar, lt.digest_hex, key);
  }
  oci::remove_tree(dir);
}

void Executor::do_workdir(StageState& s, const Instruction& ins) {
  std::string p;
  try {
    p = expand(s, ins.rest);
  } catch (const Error& e) {
    fail(ins, std::string("WORKDIR: ") + e.what());
  }
  std::string wd = cfg(s).value("WorkingDir", std::string("/"));
  if (p.empty() || p[0] != '/') p = (wd.empty() ? "/" : wd) + "/" + p;
  p = clean_path(p);
  std::string user = cfg(s).value("User", std::string());
  const std::string created_by = "WORKDIR " + p;
  CacheKey k = CacheKey::after(s.key);
  k.add("WORKDIR", p).add("user", user);
  const std::string key = k.hex();
  if (try_cache(s, key)) return emit(BuildEvent::Kind::Cached);
  cfg(s)["WorkingDir"] = p;
  RootfsView view(std::vector<std::string>(s.layers.rbegin(), s.layers.rend()));
  auto r = view.resolve(p, true);
  if (r.entry && S_ISDIR(r.entry->st.st_mode)) return commit(s, created_by, "", "", key);
  // Missing: made in a layer of its own, owned by the USER (as BuildKit).
  std::string dir = next_tmp("workdir");
  std::string staging = dir + "/upper";
  if (::mkdir(staging.c_str(), 0755) < 0) throw_errno("create " + staging);
  LayerWriter w(staging, std::vector<std::string>(s.layers.rbegin(), s.layers.rend()));
  uid_t uid = 0;
  gid_t gid = 0;
  if (!user.empty()) {
    try {
      auto ug = resolve_chown(user, w.view());
      uid = ug.first;
      gid = ug.second;
    } catch (const Error&) {
      // An unknown USER fails at the next RUN, as docker's does.
    }
  }
  try {
    w.ensure_dir(w.resolve(p).path, uid, gid);
    w.finish();
  } catch (const Error& e) {
    fail(ins, std::string("WORKDIR ") + p + ": " + e.what());
  }
  std::string tar = dir + "/layer.tar";
  snapshot::LayerTar lt = snapshot::upper_to_layer(staging, tar);
  commit(s, created_by, tar, lt.digest_hex, key);
  oci::remove_tree(dir);
}

void Executor::do_config(StageState& s, const Instruction& ins) {
  const std::string& kw = ins.keyword;
  auto x = [&](const std::string& w) {
    try {
      return expand(s, w);
    } catch (const Error& e) {
      fail(ins, kw + ": " + e.what());
    }
  };
  // The change, applied to a copy first: the description (and key) is what
  // it does, variables substituted.
  json before = s.config;
  std::string created_by;
  json& c = cfg(s);
  if (kw == "ENV") {
    auto pairs = name_values(ins, df_.escape);
    std::vector<std::pair<std::string, std::string>> set;
    for (const auto& [k, v] : pairs) set.emplace_back(x(k), x(v));  // all with the values before this ENV
    for (const auto& [k, v] : set) {
      if (k.empty()) fail(ins, "ENV names must not be empty");
      set_env(s, k, v);
      created_by += (created_by.empty() ? "ENV " : " ") + k + "=" + v;
    }
  } else if (kw == "LABEL") {
    for (const auto& [k, v] : name_values(ins, df_.escape)) {
      std::string ek = x(k), ev = x(v);
      if (!c.contains("Labels") || !c["Labels"].is_object()) c["Labels"] = json::object();
      c["Labels"][ek] = ev;
      created_by += (created_by.empty() ? "LABEL " : " ") + ek + "=" + ev;
    }
  } else if (kw == "MAINTAINER") {
    s.config["author"] = x(ins.rest);
    created_by = "MAINTAINER " + s.config["author"].get<std::string>();
  } else if (kw == "USER") {
    std::string u = x(ins.rest);
    c["User"] = u;
    created_by = "USER " + u;
  } else if (kw == "EXPOSE") {
    if (!c.contains("ExposedPorts") || !c["ExposedPorts"].is_object()) c["ExposedPorts"] = json::object();
    std::vector<std::string> ports;
    for (const auto& w : raw_args(ins, df_.escape)) {
      std::string p;
      try {
        p = normalize_port(x(w));
      } catch (const Error& e) {
        fail(ins, e.what());
      }
      c["ExposedPorts"][p] = json::object();
      ports.push_back(p);
    }
    created_by = "EXPOSE map[" + join_words(ports) + "]";
  } else if (kw == "VOLUME") {
    if (!c.contains("Volumes") || !c["Volumes"].is_object()) c["Volumes"] = json::object();
    std::vector<std::string> vols;
    for (const auto& w : raw_args(ins, df_.escape)) {
      std::string v = x(w);
      if (v.empty()) fail(ins, "VOLUME specified can not be an empty string");
      c["Volumes"][v] = json::object();
      vols.push_back(v);
    }
    created_by = "VOLUME [" + join_words(vols) + "]";
  } else if (kw == "STOPSIGNAL") {
    std::string sig = x(ins.rest);
    c["StopSignal"] = sig;
    created_by = "STOPSIGNAL " + sig;
  } else if (kw == "CMD" || kw == "ENTRYPOINT") {
    std::vector<std::string> args;
    if (ins.json)
      args = ins.json_args;
    else
      shell_form(s, ins, args);
    c[kw == "CMD" ? "Cmd" : "Entrypoint"] = args;
    if (kw == "CMD") s.cmd_set = true;
    // docker: an ENTRYPOINT resets a Cmd that came from the base image.
    if (kw == "ENTRYPOINT" && !s.cmd_set) c["Cmd"] = nullptr;
    created_by = kw + " " + json(args).dump();
  } else if (kw == "SHELL") {
    c["Shell"] = ins.json_args;
    created_by = "SHELL " + json(ins.json_args).dump();
  } else if (kw == "HEALTHCHECK") {
    size_t sp = ins.rest.find_first_of(" \t");
    std::string type = ins.rest.substr(0, sp);
    for (auto& ch : type) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    json hc = json::object();
    if (type == "NONE") {
      hc["Test"] = {"NONE"};
    } else {
      Instruction sub = ins;
      sub.rest = trim(ins.rest.substr(sp));
      sub.json = false;
      sub.json_args.clear();
      if (!sub.rest.empty() && sub.rest[0] == '[') {
        try {
          auto j = json::parse(sub.rest);
          if (j.is_array()) {
            sub.json = true;
            for (const auto& e : j) sub.json_args.push_back(e.get<std::string>());
          }
        } catch (const json::exception&) {
        }
      }
      json test = json::array();
      if (sub.json) {
        test.push_back("CMD");
        for (const auto& a : sub.json_args) test.push_back(a);
      } else {
        test = {"CMD-SHELL", sub.rest};
      }
      hc["Test"] = test;
      auto dur = [&](const char* flag, const char* field) {
        bool found = false;
        std::string v = x(ins.flag(flag, &found));
        if (!found) return;
        try {
          hc[field] = static_cast<int64_t>(units::parse_duration(v, std::string("--") + flag).count()) * 1000000;
        } catch (const Error& e) {
          fail(ins, e.what());
        }
      };
      dur("interval", "Interval");
      dur("timeout", "Timeout");
      dur("start-period", "StartPeriod");
      dur("start-interval", "StartInterval");
      bool found = false;
      std::string retries = x(ins.flag("retries", &found));
      if (found) {
        if (retries.empty() || retries.size() > 9 || retries.find_first_not_of("0123456789") != std::string::npos)
          fail(ins, "HEALTHCHECK --retries=" + retries + ": give a number");
        hc["Retries"] = std::stoi(retries);
      }
    }
    c["Healthcheck"] = hc;
    created_by = "HEALTHCHECK " + hc.dump();
  } else {
    fail(ins, "unknown instruction: " + kw);
  }
  CacheKey k = CacheKey::after(s.key);
  k.add(kw, created_by);
  const std::string key = k.hex();
  json after = s.config;
  s.config = before;
  if (try_cache(s, key)) return emit(BuildEvent::Kind::Cached);
  s.config = after;
  commit(s, created_by, "", "", key);
}

StageResult Executor::build_stage(const StagePlan& plan, const Stage& st) {
  StageState s;
  ev_stage_ = plan.stages.size() == 1 ? "" : (st.name.empty() ? std::to_string(st.index) : st.name);
  ++ev_step_;  // one numbering over the whole build (ev_steps_: build_image)
  const Instruction& from = *st.from;
  auto t0 = std::chrono::steady_clock::now();
  emit(BuildEvent::Kind::Step, from.original);
  // FROM: with the global ARGs only.
  Vars gv = global_args_;
  Expander ge;
  ge.vars = &gv;
  ge.escape = df_.escape;
  std::string image;
  try {
    auto words = raw_args(from, df_.escape);
    image = ge.word(words.empty() ? "" : words[0]);
  } catch (const Error& e) {
    fail(from, std::string("FROM: ") + e.what());
  }
  if (image.empty()) fail(from, "FROM: the image name is empty (an ARG without a value?)");
  bool pf = false;
  std::string platform = from.flag("platform", &pf);
  if (pf) {
    try {
      platform = ge.word(platform);
    } catch (const Error& e) {
      fail(from, std::string("FROM --platform: ") + e.what());
    }
    if (platform != "linux/" + arch_ && platform != arch_ && platform != "linux/" + arch_ + "/")
      fail(from, "FROM --platform=" + platform + ": sbx builds for this host's platform (linux/" + arch_ +
                     ") only");
  }
  long base_stage = stage_ref(plan, image, st.index);
  if (base_stage >= 0 && plan.stages[static_cast<size_t>(base_stage)].name == lower(image)) {
    const StageResult& r = done_.at(static_cast<size_t>(base_stage));
    s.image_id = r.image_id;
    s.layers = r.layers;
    s.config = r.config;
    s.key = CacheKey::from("stage:" + r.image_id).hex();
  } else if (lower(image) == "scratch") {
    s.config = {{"architecture", arch_},
                {"os", "linux"},
                {"config", {{"Env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}}},
                {"rootfs", {{"type", "layers"}, {"diff_ids", json::array()}}},
                {"history", json::array()}};
    s.key = CacheKey::from("scratch").hex();
  } else {
    oci::ImageRecord rec;
    try {
      bool local = o_.pull != oci::PullPolicy::Always && o_.pull != oci::PullPolicy::Newer;
      if (local) {
        try {
          (void)store_.resolve(image);
        } catch (const Error&) {
          local = false;
        }
      }
      if (!local) emit(BuildEvent::Kind::Pull, image);
      rec = oci::resolve_or_pull(store_, image, o_.pull, o_.pull_explicit, o_.pull_options);
    } catch (const Error& e) {
      fail(from, std::string("FROM ") + image + ": " + e.what());
    }
    if (!rec.architecture.empty() && rec.architecture != arch_)
      fail(from, "FROM " + image + ": the image is for " + rec.architecture + ", not this host's " + arch_);
    load_image(s, rec);
    s.key = CacheKey::from("image:" + rec.id).hex();
  }
  emit(BuildEvent::Kind::Done, "", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  std::set<std::string> stage_declared;
  for (const auto* insp : st.body) {
    const Instruction& ins = *insp;
    if (ins.keyword == "ARG") {
      // In scope from here on: the --build-arg, else the default, else the
      // global ARG's value (only when declared again in the stage).
      Vars v = vars(s);
      Expander e;
      e.vars = &v;
      e.escape = df_.escape;
      for (const auto& w : raw_args(ins, df_.escape)) {
        size_t eq = w.find('=');
        std::string name = w.substr(0, eq);
        if (!valid_var_name(name)) fail(ins, "ARG: invalid name '" + name + "'");
        std::optional<std::string> value;
        if (eq != std::string::npos) {
          try {
            value = e.word(w.substr(eq + 1));
          } catch (const Error& err) {
            fail(ins, std::string("ARG: ") + err.what());
          }
        } else if (global_args_.count(name)) {
          value = global_args_.at(name);
        } else if (name.rfind("TARGET", 0) == 0 || name.rfind("BUILD", 0) == 0) {
          Vars auto_args = {{"TARGETPLATFORM", "linux/" + arch_}, {"TARGETOS", "linux"}, {"TARGETARCH", arch_},
                            {"TARGETVARIANT", ""}, {"BUILDPLATFORM", "linux/" + arch_}, {"BUILDOS", "linux"},
                            {"BUILDARCH", arch_}, {"BUILDVARIANT", ""}};
          if (auto it = auto_args.find(name); it != auto_args.end()) value = it->second;
        }
        for (const auto& [k, val] : o_.build_args)
          if (k == name) {
            value = val;
            consumed_.insert(k);
          }
        stage_declared.insert(name);
        if (value)
          s.args[name] = *value;
        else
          s.args.erase(name);
      }
      continue;
    }
    check_cancel(&ins);
    ++ev_step_;
    ++steps_;
    auto ts = std::chrono::steady_clock::now();
    std::string shown = ins.original;
    emit(BuildEvent::Kind::Step, shown);
    // The proxy ARGs need no declaration (and are never part of a key).
    for (const auto& [k, val] : o_.build_args)
      if (proxy_args().count(k) && !stage_declared.count(k)) {
        s.args[k] = val;
        consumed_.insert(k);
      }
    try {
      if (ins.keyword == "RUN") {
        do_run(s, ins, s.key);
      } else if (ins.keyword == "COPY" || ins.keyword == "ADD") {
        do_copy(s, ins, ins.keyword == "ADD");
      } else if (ins.keyword == "WORKDIR") {
        do_workdir(s, ins);
      } else {
        do_config(s, ins);
      }
    } catch (const json::exception& e) {
      // A field of the base image's config of a type this step cannot use.
      fail(ins, std::string("the image config has a malformed field: ") + e.what());
    }
    emit(BuildEvent::Kind::Done, "", std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count());
  }
  if (s.image_id.empty()) {
    // FROM scratch and nothing else: an empty image.
    const std::string key = CacheKey::after(s.key).add("empty", "").hex();
    if (!try_cache(s, key)) commit(s, "FROM scratch", "", "", key);
  }
  return StageResult{s.image_id, s.layers, s.config};
}

BuildResult Executor::run() {
  auto t0 = std::chrono::steady_clock::now();
  if (!o_.platform.empty() && o_.platform != "linux/" + arch_ && o_.platform != arch_)
    throw Error("--platform " + o_.platform + ": sbx builds for this host's platform (linux/" + arch_ + ") only");
  // The store must not lose our temp dirs or unindexed blobs to `sbx gc`
  // while we build (imports hold the same lock).
  fs::FileLock gc_lock(store_.root() + "/gc.lock", fs::FileLock::Shared);
  make_tmp();
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      try {
        oci::remove_tree(dir);
      } catch (const std::exception& e) {
        log::warn(std::string("could not remove the build's temp dir (sbx gc will): ") + e.what());
      }
    }
  } cleanup{tmp_};

  prepare_context();
  std::string df_name;
  std::string text = read_dockerfile(df_name);
  df_ = parse_dockerfile(text, df_name);
  StagePlan plan = plan_stages(df_);
  plan_ = &plan;
  // .dockerignore: <Dockerfile>.dockerignore beside the Dockerfile wins over the context's.
  {
    std::string ig;
    std::string ig_name = ".dockerignore";
    if (!o_.has_dockerfile_text && !o_.dockerfile.empty()) {
      // A Dockerfile in the context: its .dockerignore resolved there, never
      // followed out of it (the context may be a client's tar).
      std::string p;
      if (o_.dockerfile[0] == '/') {
        p = o_.dockerfile + ".dockerignore";
      } else {
        RootfsView v({context_dir_}, true);
        auto r = v.resolve(o_.dockerfile + ".dockerignore", true, true);
        if (r.entry && S_ISREG(r.entry->st.st_mode)) p = r.entry->host_path;
      }
      if (!p.empty() && fs::exists(p)) {
        ig = fs::read_file(p);
        ig_name = o_.dockerfile + ".dockerignore";
      }
    }
    if (ig.empty()) {
      RootfsView v({context_dir_}, true);
      auto e = v.lookup("/.dockerignore");
      if (e && S_ISREG(e->st.st_mode)) ig = fs::read_file(e->host_path);
    }
    ignore_ = IgnoreMatcher(ig, ig_name);
  }

  // Global ARGs: the values FROM lines see.
  global_args_ = {{"TARGETPLATFORM", "linux/" + arch_}, {"TARGETOS", "linux"}, {"TARGETARCH", arch_},
                  {"TARGETVARIANT", ""},  {"BUILDPLATFORM", "linux/" + arch_}, {"BUILDOS", "linux"},
                  {"BUILDARCH", arch_},   {"BUILDVARIANT", ""}};
  for (const auto* ins : plan.global_args) {
    Expander e;
    e.vars = &global_args_;
    e.escape = df_.escape;
    for (const auto& w : raw_args(*ins, df_.escape)) {
      size_t eq = w.find('=');
      std::string name = w.substr(0, eq);
      if (!valid_var_name(name)) fail(*ins, "ARG: invalid name '" + name + "'");
      std::optional<std::string> value;
      if (eq != std::string::npos) {
        try {
          value = e.word(w.substr(eq + 1));
        } catch (const Error& err) {
          fail(*ins, std::string("ARG: ") + err.what());
        }
      }
      for (const auto& [k, v] : o_.build_args)
        if (k == name) {
          value = v;
          consumed_.insert(k);
        }
      global_declared_.insert(name);
      if (value)
        global_args_[name] = *value;
      else
        global_args_.erase(name);
    }
  }

  size_t target = plan.stages.size() - 1;
  if (!o_.target.empty()) {
    long t = stage_ref(plan, o_.target, plan.stages.size());
    if (t < 0 || plan.stages[static_cast<size_t>(t)].name != lower(o_.target)) {
      std::string names;
      for (const auto& s : plan.stages)
        if (!s.name.empty()) names += (names.empty() ? "" : ", ") + s.name;
      throw Error("--target " + o_.target + ": no stage of that name in " + df_.path +
                  (names.empty() ? " (its stages have no names)" : " (its stages: " + names + ")"));
    }
    target = static_cast<size_t>(t);
  }
  // Steps are numbered over the whole build, as docker's "Step 3/7": every
  // FROM and every instruction but ARG of the stages the target needs.
  const std::vector<size_t> needed = needed_stages(plan, target);
  ev_step_ = ev_steps_ = 0;
  for (size_t i : needed) {
    ++ev_steps_;
    for (const auto* ins : plan.stages[i].body)
      if (ins->keyword != "ARG") ++ev_steps_;
  }
  for (size_t i : needed) {
    check_cancel(nullptr);
    done_[i] = build_stage(plan, plan.stages[i]);
  }
  StageResult final_stage = done_.at(target);

  // --label: one more config step (cached like the others).
  std::string image_id = final_stage.image_id;
  if (!o_.labels.empty()) {
    StageState s;
    s.image_id = final_stage.image_id;
    s.layers = final_stage.layers;
    s.config = final_stage.config;
    std::string desc;
    for (const auto& [k, v] : o_.labels) desc += (desc.empty() ? "LABEL " : " ") + k + "=" + v;
    const std::string key = CacheKey::after(CacheKey::from("image:" + s.image_id).hex()).add("labels", desc).hex();
    const int cached_steps = cached_;  // (not a step of the Dockerfile)
    const bool hit = try_cache(s, key);
    cached_ = cached_steps;
    if (!hit) {
      json& c = cfg(s);
      if (!c.contains("Labels") || !c["Labels"].is_object()) c["Labels"] = json::object();
      for (const auto& [k, v] : o_.labels) c["Labels"][k] = v;
      commit(s, desc, "", "", key);
    }
    image_id = s.image_id;
  }

  std::vector<std::string> unused;
  for (const auto& [k, v] : o_.build_args)
    if (!consumed_.count(k) && !proxy_args().count(k)) unused.push_back(k);
  if (!unused.empty()) {
    ev_stage_.clear();
    ev_step_ = ev_steps_ = 0;
    emit(BuildEvent::Kind::Warning, "one or more build args were not consumed: " + join_words(unused));
  }

  store_.set_build_cache(image_id, false);
  for (const auto& t : o_.tags) store_.tag(image_id, t);
  BuildResult res;
  res.image = store_.resolve(image_id);
  res.steps = steps_;
  res.cached = cached_;
  res.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  return res;
}

}  // namespace

BuildResult build_image(const std::string& root, const std::string& run_root, const BuildOptions& opts) {
  Executor e(root, run_root, opts);
  return e.run();
}

}  // namespace sbx::build
