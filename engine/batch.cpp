// Engine: batch (engine/batch.h). One parent loop, single-threaded: it parses
// the task file, forks one worker process per task (at most req.parallel at a
// time), reads each worker's stdout/stderr pipes (bounded) and its result
// pipe, and writes a result line when the worker has ended. The worker runs
// Engine::run with its fds 0/1/2 set to the task's stdin and the pipes, so
// the sandbox inherits them exactly as `sbx run` inherits the terminal's.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_number.h"
#include "common/units.h"
#include "engine/batch.h"
#include "engine/engine.h"
#include "engine/sandbox_options.h"
#include "oci/auth_config.h"
#include "runtime/backends.h"
#include "runtime/state.h"

namespace sbx::engine {

namespace {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

/// One task line, parsed; `error` set when it is malformed.
struct Task {
  size_t line = 0;
  std::string id;
  std::string error;
  std::string image;
  std::vector<std::string> argv;
  std::optional<std::string> stdin_data;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::pair<std::string, std::string>> files;  ///< absolute path → content
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<int64_t> memory_bytes, pids_limit;
  std::optional<double> cpus;
  std::optional<NetworkMode> network;  ///< "network": else the batch's
};

/// "none", "private" (or "bridge"), "host" → the mode; throws sbx::Error.
NetworkMode parse_network(const std::string& v) {
  if (v == "none") return NetworkMode::None;
  if (v == "private" || v == "bridge") return NetworkMode::Private;
  if (v == "host") return NetworkMode::Host;
  throw Error(ErrorKind::InvalidArgument, "\"network\" must be none, private or host (not \"" + v + "\")");
}

const char* network_name(NetworkMode m) {
  return m == NetworkMode::Private ? "private" : m == NetworkMode::Host ? "host" : "none";
}

/// The mode of an options' network ("" and none: None; any name but
/// none/private/bridge/host: a user-defined network).
NetworkMode options_network(const std::string& v) {
  if (v.empty()) return NetworkMode::None;
  if (v == "none" || v == "private" || v == "bridge" || v == "host") return parse_network(v);
  return NetworkMode::User;
}

/// The task's network over the batch's options: a task line's "network"
/// other than the batch's replaces it (private then keeps the batch's egress
/// options when the batch is private too, else open egress; none and host
/// have none of them).
void apply_task_network(SandboxOptions& o, const Task& t) {
  const NetworkMode base = options_network(o.network);
  if (!t.network || *t.network == base) return;
  if (*t.network != NetworkMode::Private || base != NetworkMode::Private) {
    o.allow_egress.clear();
    o.deny_egress.clear();
    o.publish.clear();
    o.dns.clear();
    o.add_hosts.clear();
    o.network_aliases.clear();
    o.ip.clear();
    o.network_endpoints.clear();
  }
  o.network = network_name(*t.network);
}

Task parse_task(const std::string& text, size_t line) {
  Task t;
  t.line = line;
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    t.error = "line " + std::to_string(line) + ": not JSON: " + e.what();
    return t;
  }
  try {
    if (!j.is_object()) throw Error("a task is a JSON object");
    if (j.contains("id")) {
      if (j["id"].is_string()) t.id = j["id"].get<std::string>();
      else if (auto n = json_number::to_int64(j["id"])) t.id = std::to_string(*n);
      else throw Error(ErrorKind::InvalidArgument, "\"id\" must be a string or an integer");
    }
    if (t.id.empty()) throw Error("\"id\" is missing or empty");
    for (const auto& [k, v] : j.items())
      if (k != "id" && k != "image" && k != "cmd" && k != "script" && k != "stdin" && k != "env" && k != "files" &&
          k != "timeout" && k != "memory" && k != "pids_limit" && k != "cpus" && k != "network")
        throw Error("unknown key \"" + k +
                    "\" (id, image, cmd, script, stdin, env, files, timeout, memory, pids_limit, cpus, network)");
    if (j.contains("image")) t.image = j["image"].get<std::string>();
    if (j.contains("cmd") == j.contains("script")) throw Error("give exactly one of \"cmd\" (argv) and \"script\"");
    if (j.contains("cmd")) {
      if (!j["cmd"].is_array() || j["cmd"].empty()) throw Error(ErrorKind::InvalidArgument,
                  "\"cmd\" must be a non-empty array of strings");
      for (const auto& a : j["cmd"]) t.argv.push_back(a.get<std::string>());
    } else {
      t.argv = {"/bin/sh", "-c", j["script"].get<std::string>()};
    }
    if (j.contains("stdin")) t.stdin_data = j["stdin"].get<std::string>();
    if (j.contains("env")) {
      if (!j["env"].is_object()) throw Error(ErrorKind::InvalidArgument, "\"env\" must be an object of strings");
      for (const auto& [k, v] : j["env"].items()) {
        if (k.empty() || k.find('=') != std::string::npos) throw Error("bad env name \"" + k + "\"");
        t.env.emplace_back(k, v.get<std::string>());
      }
    }
    if (j.contains("files")) {
      if (!j["files"].is_object()) throw Error(ErrorKind::InvalidArgument,
                  "\"files\" must be an object: path → text or {\"base64\": …}");
      for (const auto& [path, v] : j["files"].items()) {
        if (path.empty() || path[0] != '/' || path.find("/../") != std::string::npos ||
            (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0) || path.back() == '/')
          throw Error(ErrorKind::InvalidArgument,
                      "file path \"" + path + "\" must be absolute, name a file and contain no ..");
        if (v.is_string()) t.files.emplace_back(path, v.get<std::string>());
        else if (v.is_object() && v.contains("base64")) t.files.emplace_back(path, oci::base64_decode(v["base64"].get<std::string>()));
        else throw Error("file \"" + path + "\": give text or {\"base64\": …}");
      }
    }
    if (j.contains("timeout")) {
      const auto& v = j["timeout"];
      if (v.is_number()) {
        auto ms = json_number::seconds_to_ms(v, json_number::kMaxSeconds);
        if (!ms || ms->count() <= 0)
          throw Error(ErrorKind::InvalidArgument, "\"timeout\" must be a number of seconds above 0 (at most 1e9)");
        t.timeout = *ms;
      } else {
        t.timeout = units::parse_duration(v.get<std::string>(), "\"timeout\"");
      }
    }
    if (j.contains("memory")) {
      const auto& v = j["memory"];
      if (v.is_number()) {
        t.memory_bytes = json_number::to_int64(v);
        if (!t.memory_bytes) throw Error(ErrorKind::InvalidArgument, "\"memory\" must be an integer number of bytes or a size (\"256m\")");
      } else {
        t.memory_bytes = static_cast<int64_t>(units::parse_size(v.get<std::string>(), "\"memory\""));
      }
      if (*t.memory_bytes <= 0) throw Error(ErrorKind::InvalidArgument, "\"memory\" must be above 0");
    }
    if (j.contains("pids_limit")) {
      t.pids_limit = json_number::to_int64(j["pids_limit"]);
      if (!t.pids_limit || *t.pids_limit <= 0) throw Error(ErrorKind::InvalidArgument, "\"pids_limit\" must be an integer above 0");
    }
    if (j.contains("cpus")) {
      t.cpus = j["cpus"].get<double>();
      if (*t.cpus <= 0) throw Error(ErrorKind::InvalidArgument, "\"cpus\" must be above 0");
    }
    if (j.contains("network")) t.network = parse_network(j["network"].get<std::string>());
  } catch (const std::exception& e) {
    // nlohmann's type errors say "type must be string, but is number".
    t.error = "line " + std::to_string(line) + (t.id.empty() ? "" : " (id " + t.id + ")") + ": " + e.what();
  }
  return t;
}

/// Ids that have a result line in `path` already (--resume). A torn last
/// line (the batch was killed while writing it) does not count.
std::set<std::string> done_ids(const std::string& path) {
  std::set<std::string> ids;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    try {
      auto j = json::parse(line);
      if (j.contains("id") && j["id"].is_string()) ids.insert(j["id"].get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return ids;
}

/// Output of one stream, at most `max` bytes kept.
struct Capture {
  int fd = -1;
  std::string data;
  bool truncated = false;
  /// Reads what is there (non-blocking fd); returns false at EOF.
  bool pump(size_t max) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        size_t keep = data.size() < max ? std::min(max - data.size(), static_cast<size_t>(n)) : 0;
        data.append(buf, keep);
        if (keep < static_cast<size_t>(n)) truncated = true;
        continue;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      return errno == EAGAIN;
    }
  }
};

struct Worker {
  const Task* task = nullptr;
  pid_t pid = -1;   ///< the worker process (fresh sandbox); -1 for a pooled one
  int pidfd = -1;
  /// A warm-pool sandbox running the task in this process (no worker).
  std::unique_ptr<runtime::WarmSandbox> sb;
  std::optional<clock::time_point> deadline;  ///< pooled: its timeout
  bool timed_out = false;
  bool pooled = false;
  Capture out, err, result;
  std::string files_dir;
  bool interrupted = false;
};

/// JSON strings must be valid UTF-8: a workload's bytes that are not are
/// replaced (U+FFFD), as nlohmann's `replace` handler does.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json invalid_result(const Task& t) {
  return {{"id", t.id}, {"line", t.line}, {"exit_code", nullptr}, {"end_reason", "invalid"}, {"error", t.error}};
}

/// A result's status fields; exit_code as `sbx run` exits (124 for a
/// timeout, 137 for an OOM kill: spec::reported_exit_code).
json status_json(const ExitStatus& st) {
  return {{"exit_code", runtime::reported_exit_code(st)},
         {"end_reason", runtime::end_reason(st)},
         {"signal", st.signal},
         {"oom_kills", st.oom_kills},
         {"pids_max_hits", st.pids_max_hits},
         {"duration_ms", st.usage.duration_ms},
         {"cpu_ms", st.usage.cpu_ms},
         {"max_rss_bytes", st.usage.max_rss_bytes},
         {"io_read_bytes", st.usage.io_read_bytes},
         {"io_write_bytes", st.usage.io_write_bytes},
         {"interrupted", st.forwarded_signal != 0}};
}

/// Runs in the forked worker: the task's sandbox with fds 0/1/2 set up by
/// the caller; writes {"status"…} or {"error"…} to `result_fd`. Never returns.
[[noreturn]] void worker_main(Engine& eng, const BatchRequest& req, RunRequest run, int result_fd) {
  json r;
  try {
    RunResult res = eng.run(run);
    r = status_json(res.status);
  } catch (const Error& e) {
    r = {{"exit_code", e.exit_code()}, {"end_reason", "failed"}, {"error", e.what()}};
  } catch (const std::exception& e) {
    r = {{"exit_code", kExitSbxFailed}, {"end_reason", "failed"}, {"error", e.what()}};
  }
  (void)req;
  std::string text = dump(r);
  (void)!::write(result_fd, text.data(), text.size());
  ::_exit(0);
}

void set_nonblock(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// ---- reading ----------------------------------------------------------------

/// Every task line of `in`, parsed (malformed ones with their error; a
/// repeated id is an error of the later line). Blank lines are skipped.
std::vector<Task> read_tasks(std::istream& in) {
  std::vector<Task> tasks;
  std::string line;
  size_t n = 0;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Task t = parse_task(line, n);
    if (t.error.empty() && !seen.insert(t.id).second)
      t.error = "line " + std::to_string(n) + ": duplicate id \"" + t.id + "\"";
    tasks.push_back(std::move(t));
  }
  return tasks;
}

/// The tasks of req.tasks: the file, or req.input for "-" (the front end's
/// stdin; the engine reads no stream of its own).
std::vector<Task> read_tasks(const BatchRequest& req) {
  if (req.tasks == "-") {
    if (!req.input) throw Error(ErrorKind::InvalidArgument, "sbx batch: tasks from '-' need an input stream");
    return read_tasks(*req.input);
  }
  std::istringstream in(fs::read_file(req.tasks));
  return read_tasks(in);
}

// ---- reporting --------------------------------------------------------------

/// Result lines: appended to req.output (truncated first unless resuming;
/// a torn last line ended), handed to req.on_result, counted in the progress.
class Reporter {
 public:
  explicit Reporter(const BatchRequest& req) : req_(req), t0_(clock::now()) {
    if (req.output.empty()) return;
    fd_ = ::open(req.output.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_errno("open the batch output " + req.output);
    struct stat sst {};
    if (!req.resume) {
      if (::fstat(fd_, &sst) == 0 && sst.st_size > 0 && ::ftruncate(fd_, 0) < 0) {
        ::close(fd_);
        throw_errno("truncate the batch output " + req.output + " (use --resume to keep it)");
      }
    } else if (::fstat(fd_, &sst) == 0 && sst.st_size > 0) {
      // A line torn by a killed batch (done_ids ignored it) is ended, so the
      // next result starts on a line of its own.
      char last = '\n';
      if (::pread(fd_, &last, 1, sst.st_size - 1) == 1 && last != '\n') fs::write_all(fd_, "\n", req.output);
    }
  }
  ~Reporter() {
    if (fd_ >= 0) ::close(fd_);
  }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  /// One result line; `failed`: it counts as failed.
  void emit(const json& j, bool failed) {
    std::string line = dump(j) + "\n";
    // One write(2) per line with O_APPEND: a line is never interleaved or
    // half there unless the batch was killed in the middle of it.
    if (fd_ >= 0) fs::write_all(fd_, line, req_.output);  // throws sbx::Error naming it
    if (req_.on_result) req_.on_result(line.substr(0, line.size() - 1));
    ++progress.done;
    if (failed) ++progress.failed;
  }
  /// The task could not start: a "failed" result.
  void fail(const Task& t, const std::string& why, int code = kExitSbxFailed) {
    emit({{"id", t.id}, {"line", t.line}, {"exit_code", code}, {"end_reason", "failed"}, {"error", why}}, true);
  }
  /// Calls req.progress with the elapsed time.
  void report() {
    progress.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0_);
    if (req_.progress) req_.progress(progress);
  }

  BatchProgress progress;

 private:
  const BatchRequest& req_;
  clock::time_point t0_;
  int fd_ = -1;
};

// ---- running ----------------------------------------------------------------

/// The options of the sandbox the pool for `image` and t's network keeps:
/// the batch's options on that image and network, a placeholder command
/// (each pooled task brings its own argv and env).
SandboxOptions pool_options(const SandboxOptions& base, const Task& t, const std::string& image) {
  SandboxOptions o = base;
  o.id.clear();
  o.name.clear();
  o.hostname.clear();
  o.image = image;
  o.entrypoint = std::vector<std::string>{};
  o.command = {"true"};
  o.hold_without_command = false;
  apply_task_network(o, t);
  return o;
}

/// The options of task t over the batch's: its image (else the batch's),
/// argv, env, stdin, limits, timeout and network.
SandboxOptions task_options(const SandboxOptions& base, const Task& t) {
  SandboxOptions o = pool_options(base, t, t.image.empty() ? base.image : t.image);
  // The task's argv is the whole command (cmd, or script under /bin/sh -c):
  // the image's Entrypoint is not put before it.
  o.command = t.argv;
  for (const auto& [k, v] : t.env) o.env.push_back(k + "=" + v);
  if (t.timeout) o.timeout = *t.timeout;
  if (t.memory_bytes) o.memory_bytes = *t.memory_bytes;
  if (t.pids_limit) o.pids_limit = *t.pids_limit;
  if (t.cpus) o.cpus = *t.cpus;
  o.stdin_open = t.stdin_data.has_value();
  return o;
}

}  // namespace

SandboxOptions batch_task_options(const SandboxOptions& base, const std::string& line) {
  Task t = parse_task(line, 1);
  if (!t.error.empty()) throw Error(ErrorKind::InvalidArgument, t.error);
  return task_options(base, t);
}

namespace {

/// The running part of a batch: starts tasks (a forked worker with a fresh
/// sandbox, or a warm-pool sandbox), pumps their output, turns their ends
/// into result lines. Owns the workers, the pools and the work dir; the
/// destructor leaves nothing.
class Runner {
 public:
  Runner(Engine& eng, const BatchRequest& req, Reporter& rep, const std::string& work_root,
         std::function<std::unique_ptr<WarmPool>(const SandboxSpec&, size_t)> make_pool)
      : eng_(eng), req_(req), rep_(rep), work_root_(work_root), make_pool_(std::move(make_pool)) {}
  ~Runner() {
    stop_all();
    pools_.clear();
    runtime::remove_tree(work_root_);
  }

  size_t running() const { return running_.size(); }

  /// Starts task t; reports a result at once when it cannot start.
  void launch(const Task& t);

  /// Waits up to a second for output, a worker's end or a signal on `sfd`;
  /// returns the stop signal when one came, else 0.
  int poll_once(int sfd, bool interrupted);

  /// Interrupts every running task (their sandboxes are killed and removed;
  /// they get no result).
  void interrupt_all() {
    for (auto& w : running_) interrupt(w);
  }

  /// Interrupts and collects every running task.
  void stop_all() {
    for (auto& w : running_) interrupt(w);
    for (auto& w : running_) finish(w);
    running_.clear();
  }

 private:
  void cleanup(Worker& w);
  void interrupt(Worker& w);
  void finish(Worker& w);
  bool start_pooled(const Task& t, Worker& w, RunRequest& run, const std::string& image);
  void start_worker(const Task& t, Worker& w, RunRequest& run, int in_fd, int out_p[2], int err_p[2], int res_p[2]);
  /// build_sandbox on a resolved image; each distinct warning goes to
  /// req.on_warning once.
  RunRequest build(const SandboxOptions& o, const std::string& image);

  Engine& eng_;
  const BatchRequest& req_;
  Reporter& rep_;
  const std::string work_root_;
  std::function<std::unique_ptr<WarmPool>(const SandboxSpec&, size_t)> make_pool_;
  std::map<std::string, ResolvedImage> images_;
  std::map<std::string, std::string> base_errors_;  ///< image → why it could not be resolved
  std::set<std::string> warned_;
  // Warm pools, one per image and network (declared before `running_`: a
  // taken sandbox dies with its pool, engine/pool.h).
  std::map<std::string, std::unique_ptr<WarmPool>> pools_;
  std::vector<Worker> running_;
  size_t serial_ = 0;
};

void Runner::cleanup(Worker& w) {
  for (Capture* c : {&w.out, &w.err, &w.result})
    if (c->fd >= 0) ::close(std::exchange(c->fd, -1));
  if (w.pidfd >= 0) ::close(std::exchange(w.pidfd, -1));
  if (!w.files_dir.empty()) runtime::remove_tree(w.files_dir);
  w.sb.reset();  // (destroys it)
}

// Stops a running task (a signal to the batch, or sbx's own failure).
void Runner::interrupt(Worker& w) {
  w.interrupted = true;
  if (w.sb) {
    w.sb->kill();
  } else if (w.pid > 0) {
    ::kill(w.pid, SIGINT);
    ::kill(w.pid, SIGTERM);
  }
}

bool Runner::start_pooled(const Task& t, Worker& w, RunRequest& run, const std::string& image) {
  try {
    // One pool per image and network: a pooled sandbox's network (its
    // veth, lease, nft rules, DNS proxy) is made with it ahead of its
    // task and removed with it (engine/pool.h).
    auto& pool = pools_[image + '\n' + network_name(run.spec.network)];
    if (!pool) pool = make_pool_(build(pool_options(req_.options, t, image), image).spec, req_.pool);
    w.sb = pool->take();
    w.pooled = true;
    return true;
  } catch (const Error& e) {
    rep_.fail(t, e.what(), e.exit_code());
    return false;
  }
}

RunRequest Runner::build(const SandboxOptions& o, const std::string& image) {
  std::vector<std::string> warnings;
  RunRequest run = build_sandbox(o, images_.at(image), "", &warnings);
  for (auto& w : warnings)
    if (warned_.insert(w).second && req_.on_warning) req_.on_warning(w);
  return run;
}

void Runner::launch(const Task& t) {
  const std::string image = t.image.empty() ? req_.options.image : t.image;
  if (image.empty()) return rep_.fail(t, "no image: give \"image\" in the task or --image");
  const SandboxOptions o = task_options(req_.options, t);
  // Each image is resolved (pulled as the options say) once; a failure
  // fails every task of that image with the same error.
  if (!images_.count(image) && !base_errors_.count(image)) {
    try {
      images_.emplace(image, resolve_image(eng_, o));
    } catch (const std::exception& e) {
      base_errors_[image] = e.what();
    }
  }
  if (base_errors_.count(image)) return rep_.fail(t, base_errors_[image]);
  // The engine's one builder, as `sbx run` and the API servers use it.
  RunRequest run;
  try {
    run = build(o, image);
  } catch (const Error& e) {
    return rep_.fail(t, e.what(), e.exit_code());
  }
  run.io.forward_signals = true;

  Worker w;
  w.task = &t;
  // The warm pool: tasks of a backend that starts sandboxes ahead
  // (native), without limits of their own (those would need a pool of
  // their own; they get a fresh sandbox).
  const bool pooled = req_.pool > 0 && !t.memory_bytes && !t.pids_limit && !t.cpus &&
                      runtime::backend_for(run.spec.runtime)->supports(runtime::Operation::Warm);
  if (pooled && !start_pooled(t, w, run, image)) return;
  try {
    if (!t.files.empty() && !pooled) {
      // Each file on the host under RUN_ROOT/.batch-<pid>/<n>/, bind-mounted
      // at its path (the directory goes when the task ends).
      w.files_dir = work_root_ + "/" + std::to_string(serial_++);
      fs::mkdir_p(w.files_dir, 0755);
      size_t k = 0;
      for (const auto& [path, content] : t.files) {
        std::string host = w.files_dir + "/" + std::to_string(k++);
        fs::write_file_atomic(host, content, 0644);
        run.spec.mounts.push_back(Mount{path, "bind", host, {"rbind"}});
      }
    }
  } catch (const std::exception& e) {
    if (!w.files_dir.empty()) runtime::remove_tree(w.files_dir);
    return rep_.fail(t, std::string("write the task's files: ") + e.what());
  }
  int in_fd = -1, out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, res_p[2] = {-1, -1};
  if (t.stdin_data) {
    in_fd = ::memfd_create("sbx-batch-stdin", MFD_CLOEXEC);
    bool ok = in_fd >= 0;
    if (ok) {
      try {
        fs::write_all(in_fd, *t.stdin_data, "the task's stdin");
      } catch (const Error&) {
        ok = false;
      }
    }
    if (!ok || ::lseek(in_fd, 0, SEEK_SET) < 0) {
      std::string why = std::strerror(errno);
      if (in_fd >= 0) ::close(in_fd);
      if (!w.files_dir.empty()) runtime::remove_tree(w.files_dir);
      return rep_.fail(t, "memfd for the task's stdin: " + why);
    }
  }
  if (::pipe2(out_p, O_CLOEXEC) < 0 || ::pipe2(err_p, O_CLOEXEC) < 0 || ::pipe2(res_p, O_CLOEXEC) < 0) {
    for (int fd : {in_fd, out_p[0], out_p[1], err_p[0], err_p[1], res_p[0], res_p[1]})
      if (fd >= 0) ::close(fd);
    if (!w.files_dir.empty()) runtime::remove_tree(w.files_dir);
    throw_errno("pipe for a batch worker");
  }
  if (!pooled) return start_worker(t, w, run, in_fd, out_p, err_p, res_p);
  // The command goes to the waiting sandbox; its output to our pipes.
  runtime::PooledCommand cmd;
  cmd.args = run.spec.process.args;
  cmd.env = run.spec.process.env;
  cmd.files = t.files;
  int null = in_fd >= 0 ? -1 : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  cmd.stdio[0] = in_fd >= 0 ? in_fd : null;
  cmd.stdio[1] = out_p[1];
  cmd.stdio[2] = err_p[1];
  std::string error;
  int code = 0;
  try {
    w.sb->run(cmd);
  } catch (const Error& e) {
    error = e.what();
    code = e.exit_code();
  }
  for (int fd : {null, in_fd, out_p[1], err_p[1], res_p[0], res_p[1]})
    if (fd >= 0) ::close(fd);
  w.out.fd = out_p[0];
  w.err.fd = err_p[0];
  set_nonblock(out_p[0]);
  set_nonblock(err_p[0]);
  if (!error.empty()) {
    w.out.pump(req_.max_output);
    w.err.pump(req_.max_output);
    json r = {{"id", t.id}, {"line", t.line}, {"exit_code", code}, {"end_reason", "failed"}, {"error", error},
              {"stdout", w.out.data}, {"stderr", w.err.data}, {"stdout_truncated", w.out.truncated},
              {"stderr_truncated", w.err.truncated}, {"pooled", true}};
    cleanup(w);
    return rep_.emit(r, true);
  }
  if (run.spec.timeout.count() > 0) w.deadline = w.sb->started() + run.spec.timeout;
  running_.push_back(std::move(w));
}

void Runner::start_worker(const Task& t, Worker& w, RunRequest& run, int in_fd, int out_p[2], int err_p[2],
                          int res_p[2]) {
  (void)t;
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in_fd, out_p[0], out_p[1], err_p[0], err_p[1], res_p[0], res_p[1]})
      if (fd >= 0) ::close(fd);
    if (!w.files_dir.empty()) runtime::remove_tree(w.files_dir);
    throw_errno("fork a batch worker");
  }
  if (pid == 0) {
    // The worker: its own process group (a terminal's ^C goes to the batch,
    // which decides), fds 0/1/2 for the sandbox to inherit.
    ::setpgid(0, 0);
    // A batch killed outright (SIGKILL) takes its tasks with it: the
    // worker's wait() reads SIGTERM as an interrupt (forwarded, then
    // SIGKILL after the grace) and removes the sandbox.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::kill(::getpid(), SIGTERM);
    int null = ::open("/dev/null", O_RDONLY);
    if (::dup2(in_fd >= 0 ? in_fd : null, 0) < 0 || ::dup2(out_p[1], 1) < 0 || ::dup2(err_p[1], 2) < 0) ::_exit(125);
    // Nothing of the batch's but the result pipe: not the other tasks'
    // pipes, nor the warm pools' setup channels (their EOF must come).
    const unsigned keep = static_cast<unsigned>(res_p[1]);
    if (keep > 3) ::syscall(SYS_close_range, 3U, keep - 1, 0U);
    ::syscall(SYS_close_range, keep + 1, ~0U, 0U);
    worker_main(eng_, req_, std::move(run), res_p[1]);
  }
  for (int fd : {in_fd, out_p[1], err_p[1], res_p[1]})
    if (fd >= 0) ::close(fd);
  w.pid = pid;
  w.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  w.out.fd = out_p[0];
  w.err.fd = err_p[0];
  w.result.fd = res_p[0];
  for (int fd : {out_p[0], err_p[0], res_p[0]}) set_nonblock(fd);
  running_.push_back(std::move(w));
}

void Runner::finish(Worker& w) {
  int status = 0;
  std::optional<ExitStatus> pooled_status;
  if (w.sb) {
    try {
      // (It has ended: returns at once; the batch reads its signals itself.)
      ExitStatus st = w.sb->wait();
      st.timed_out = w.timed_out;
      if (st.timed_out) st.oom_killed = false;
      pooled_status = st;
    } catch (const Error& e) {
      w.result.data = dump({{"exit_code", e.exit_code()}, {"end_reason", "failed"}, {"error", e.what()}});
    }
    w.sb.reset();  // (destroys it)
    if (pooled_status) w.result.data = dump(status_json(*pooled_status));
  } else {
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // Everything that wrote to the pipes is gone (the sandbox with the worker).
  w.out.pump(req_.max_output);
  w.err.pump(req_.max_output);
  w.result.pump(1 << 20);
  const Task& t = *w.task;
  if (w.interrupted) {
    cleanup(w);
    return;  // no result: --resume runs it again
  }
  json r;
  try {
    r = json::parse(w.result.data);
  } catch (const std::exception&) {
    r = {{"exit_code", kExitSbxFailed}, {"end_reason", "failed"},
         {"error", "the batch worker ended without a result (wait status " + std::to_string(status) + ")"}};
  }
  r.erase("interrupted");
  json line = {{"id", t.id}, {"line", t.line}};
  for (auto& [k, v] : r.items()) line[k] = v;
  line["stdout"] = w.out.data;
  line["stderr"] = w.err.data;
  line["stdout_truncated"] = w.out.truncated;
  line["stderr_truncated"] = w.err.truncated;
  if (w.pooled) line["pooled"] = true;
  bool failed = !(line["end_reason"] == "exit" && line["exit_code"] == 0);
  cleanup(w);
  rep_.emit(line, failed);
}

int Runner::poll_once(int sfd, bool interrupted) {
  std::vector<struct pollfd> fds;
  fds.push_back({sfd, POLLIN, 0});
  for (const auto& w : running_) {
    fds.push_back({w.out.fd, POLLIN, 0});
    fds.push_back({w.err.fd, POLLIN, 0});
    fds.push_back({w.result.fd, POLLIN, 0});
    fds.push_back({w.sb ? w.sb->ended_fd() : w.pidfd, POLLIN, 0});
  }
  // Pooled tasks' timeouts are kept here (a fresh one's by its worker).
  int wait_ms = 1000;
  auto now = clock::now();
  for (auto& w : running_)
    if (w.deadline && !w.timed_out) {
      if (now >= *w.deadline) {
        w.timed_out = true;
        w.sb->kill();
        continue;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*w.deadline - now).count() + 1;
      wait_ms = static_cast<int>(std::min<int64_t>(wait_ms, left));
    }
  int rc = ::poll(fds.data(), fds.size(), wait_ms);
  if (rc < 0 && errno != EINTR) throw_errno("poll the batch workers");
  if (rc <= 0) return 0;
  int sig = 0;
  if (fds[0].revents & POLLIN) {
    struct signalfd_siginfo si;
    while (::read(sfd, &si, sizeof si) == sizeof si)
      if (!interrupted && !sig) sig = static_cast<int>(si.ssi_signo);
    // Two different interrupts: the worker's wait() kills the sandbox at
    // the second (as `sbx run` does), then removes it.
    if (sig) interrupt_all();
  }
  for (size_t i = 0; i < running_.size();) {
    Worker& w = running_[i];
    const auto* f = &fds[1 + 4 * i];
    if (f[0].revents) w.out.pump(req_.max_output);
    if (f[1].revents) w.err.pump(req_.max_output);
    if (f[2].revents) w.result.pump(1 << 20);
    if (f[3].revents & POLLIN) {
      finish(w);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(1 + 4 * i), fds.begin() + static_cast<std::ptrdiff_t>(5 + 4 * i));
      rep_.progress.running = running_.size();
      rep_.report();
      continue;
    }
    ++i;
  }
  return sig;
}

/// The batch's stop signals (SIGINT, SIGTERM, SIGHUP) read through a
/// signalfd; blocked with SIGCHLD while the batch runs (the workers inherit
/// the mask and their sandboxes' wait() reads them with its own signalfd).
/// The destructor drops those that came in the last moment (handled) and
/// restores the mask.
class StopSignals {
 public:
  StopSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, &old_);
    sigemptyset(&stop_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_, s);
    fd = ::signalfd(-1, &stop_, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~StopSignals() {
    if (fd >= 0) ::close(fd);
    struct timespec zero {};
    siginfo_t si;
    while (::sigtimedwait(&stop_, &si, &zero) > 0) {
    }
    ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int fd = -1;

 private:
  sigset_t old_, stop_;
};

}  // namespace

// ---- scheduling -------------------------------------------------------------

BatchSummary Engine::batch(const BatchRequest& req) {
  if (req.parallel < 1)
    throw Error(ErrorKind::InvalidArgument,
                "invalid parallelism " + std::to_string(req.parallel) + ": must be 1 or more");
  // Read all tasks first: the total is known (progress).
  const std::vector<Task> tasks = read_tasks(req);
  std::set<std::string> skip;
  if (req.resume && !req.output.empty() && fs::exists(req.output)) skip = done_ids(req.output);
  Reporter rep(req);
  BatchSummary sum;
  rep.progress.total = tasks.size();
  {
    StopSignals sig;
    Runner run(*this, req, rep, cfg_.run_root + "/.batch-" + std::to_string(::getpid()),
               [this, &req](const SandboxSpec& ps, size_t n) { return make_pool(ps, use_userns(ps, req.options.userns), n); });
    // On sbx's own failure (output not writable, fork failed) the Runner
    // stops the rest as a signal would, waits for them and leaves nothing.
    size_t next = 0;
    for (;;) {
      // Start what may start.
      while (!sum.interrupted && run.running() < static_cast<size_t>(req.parallel) && next < tasks.size()) {
        const Task& t = tasks[next++];
        // A malformed line's result is kept on resume only if its id is known.
        if (!t.id.empty() && skip.count(t.id)) {
          ++rep.progress.skipped;
          continue;
        }
        if (!t.error.empty()) {
          rep.emit(invalid_result(t), true);
          rep.report();
          continue;
        }
        run.launch(t);
        rep.progress.running = run.running();
        rep.report();
      }
      if (run.running() == 0) break;
      if (int s = run.poll_once(sig.fd, sum.interrupted); s && !sum.interrupted) {
        sum.interrupted = true;
        sum.signal = s;
      }
    }
  }
  rep.report();
  sum.progress = rep.progress;
  return sum;
}

}  // namespace sbx::engine
