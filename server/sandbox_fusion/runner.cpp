// SandboxFusion requests in pooled sandboxes (runner.h).
#include "server/sandbox_fusion/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/auth_config.h"
#include "runtime/backends.h"
#include "runtime/linux/cgroup_memory_limit.h"
#include "runtime/state.h"
#include "engine/sandbox_options.h"
#include "server/http.h"

namespace sbx::server::sandbox_fusion {

using json = nlohmann::json;
using clock = std::chrono::steady_clock;

namespace {

/// Where the code and the request's files go in the sandbox (its cwd).
constexpr const char* kWorkDir = "/workspace";
/// The driver's own files (stdin, fifos, outputs).
constexpr const char* kCtlDir = "/tmp/.sbx-sf";
/// How long past its steps' time-outs a sandbox may take before it is killed
/// (setup, the driver's reads and writes, fetch_files).
constexpr auto kHardMargin = std::chrono::seconds(5);
/// The smallest memory limit a request gets (MB).
constexpr int64_t kMinMemoryMb = 16;

std::string sh_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') o += "'\\''";
    else o += c;
  }
  return o + "'";
}

/// "1.5" for a time-out in seconds (`timeout` of busybox and coreutils take
/// fractions; 0 would mean none there, so at least 10 ms).
std::string seconds_arg(double s) {
  s = std::max(s, 0.01);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

/// The driver (runner.h) for `steps`: its markers carry `nonce`. Only shell
/// builtins besides `timeout`, so a step costs one process more than its
/// program.
std::string driver_script(const std::vector<Runner::Step>& steps, const std::string& nonce) {
  std::ostringstream s;
  s << "N=" << nonce << "\n"
    // (The work dir is there when a file was written into it, as the code
    // is: no mkdir process then.)
    << "cd " << kWorkDir << " 2>/dev/null || { mkdir -p " << kWorkDir << "; cd " << kWorkDir << "; }"
    << " || { printf '\\n%s X cannot enter the work dir\\n' \"$N\" >&2; exit 0; }\n"
    << "step() {\n"
       "  t=$1; s=$2; i=$3; shift 3\n"
       "  printf '\\n%s S %s\\n' \"$N\" \"$t\" >&2\n"
       "  timeout -s KILL \"$s\" \"$@\" < \"$i\"\n"
       "  rc=$?\n"
       "  printf '\\n%s\\n' \"$N\"\n"
       "  printf '\\n%s T %s %d\\n' \"$N\" \"$t\" \"$rc\" >&2\n"
       "  return $rc\n"
       "}\n";
  for (const auto& st : steps) {
    s << "step " << st.tag << " " << seconds_arg(st.timeout) << " " << sh_quote(st.stdin_path);
    for (const auto& a : st.argv) s << " " << sh_quote(a);
    s << " || { printf '\\n%s F\\n' \"$N\" >&2; read x; exit 0; }\n";
  }
  s << "printf '\\n%s F\\n' \"$N\" >&2\nread x\n";
  return s.str();
}

/// Splits one output stream of the driver at its markers ("\n" NONCE
/// [" " TEXT] "\n"), keeping the bytes between them.
class MarkerSplitter {
 public:
  explicit MarkerSplitter(const std::string& nonce) : marker_("\n" + nonce) {}

  /// Feeds bytes: `data(bytes)` for output, `mark(text)` for each marker.
  template <class Data, class Mark>
  void feed(const char* p, size_t n, Data&& data, Mark&& mark) {
    pending_.append(p, n);
    for (;;) {
      size_t at = pending_.find(marker_);
      if (at == std::string::npos) {
        // Keep what could be the start of a marker.
        size_t keep = std::min(pending_.size(), marker_.size() - 1);
        size_t emit = pending_.size() - keep;
        // Only a "\n" can start one: keep from the last newline in the tail.
        size_t nl = pending_.rfind('\n');
        if (nl == std::string::npos || nl < emit) emit = pending_.size();
        else emit = nl;
        if (emit) data(pending_.data(), emit);
        pending_.erase(0, emit);
        return;
      }
      size_t end = pending_.find('\n', at + marker_.size());
      if (at) data(pending_.data(), at);
      if (end == std::string::npos) {
        pending_.erase(0, at);
        return;
      }
      std::string text = pending_.substr(at + marker_.size(), end - at - marker_.size());
      if (!text.empty() && text[0] == ' ') text.erase(0, 1);
      pending_.erase(0, end + 1);
      mark(text);
    }
  }

  /// At EOF: what is left is output.
  template <class Data>
  void finish(Data&& data) {
    if (!pending_.empty()) data(pending_.data(), pending_.size());
    pending_.clear();
  }

 private:
  std::string marker_;
  std::string pending_;
};

/// Appends to `out`, keeping at most `max` bytes.
void append_bounded(std::string& out, const char* p, size_t n, size_t max) {
  if (out.size() < max) out.append(p, std::min(n, max - out.size()));
}

/// What the driver reported, from its stdout and stderr.
class DriverReader {
 public:
  DriverReader(const std::vector<Runner::Step>& steps, const std::string& nonce, size_t max_output)
      : steps_(steps), out_(nonce), err_(nonce), max_(max_output) {}

  void feed_out(const char* p, size_t n) {
    out_.feed(
        p, n, [&](const char* d, size_t k) { append_bounded(step(out_step_).out, d, k, max_); },
        [&](const std::string&) { ++out_step_; });
  }

  void feed_err(const char* p, size_t n) {
    err_.feed(
        p, n,
        [&](const char* d, size_t k) {
          if (running_) append_bounded(step(err_step_).err, d, k, max_);
          else append_bounded(stray_, d, k, 4096);
        },
        [&](const std::string& text) { mark(text); });
  }

  void out_eof() {
    out_.finish([&](const char* d, size_t k) { append_bounded(step(out_step_).out, d, k, max_); });
    out_eof_ = true;
  }

  /// "F" read, and every step's stdout separator.
  bool done() const { return done_ && (out_eof_ || out_step_ >= started_); }
  bool finished_steps() const { return done_; }

  /// At the hard deadline or an early end: the step still running (if any)
  /// ended as `status`.
  void cut(const std::string& status) {
    if (running_) {
      auto& r = step(err_step_);
      r.status = status;
      r.execution_time = std::chrono::duration<double>(clock::now() - started_at_).count();
      running_ = false;
    }
  }

  const std::string& error() const { return error_; }
  /// When the first step started and the last one ended (sbx's clock).
  clock::time_point first_start() const { return first_start_; }
  clock::time_point last_end() const { return last_end_; }
  const std::string& stray() const { return stray_; }
  /// The steps that started, in order.
  std::vector<Runner::StepResult> results() {
    results_.resize(std::min(results_.size(), started_));
    return std::move(results_);
  }

 private:
  Runner::StepResult& step(size_t i) {
    if (results_.size() <= i) results_.resize(i + 1);
    return results_[i];
  }

  void mark(const std::string& text) {
    std::istringstream in(text);
    std::string kind;
    in >> kind;
    if (kind == "F") {
      done_ = true;
    } else if (kind == "X") {
      error_ = text.size() > 2 ? text.substr(2) : "the driver failed";
    } else if (kind == "S" && started_ < steps_.size()) {
      err_step_ = started_++;
      step(err_step_).status = "Error";
      started_at_ = clock::now();
      if (started_ == 1) first_start_ = started_at_;
      running_ = true;
    } else if (kind == "T" && running_) {
      std::string tag;
      int rc = 0;
      in >> tag >> rc;
      auto& r = step(err_step_);
      last_end_ = clock::now();
      r.execution_time = std::chrono::duration<double>(last_end_ - started_at_).count();
      r.return_code = rc;
      r.status = "Finished";
      running_ = false;
      // `timeout -s KILL` answers 137 for the command it killed.
      if ((rc == 137 || rc == 124) && r.execution_time >= steps_.at(err_step_).timeout - 0.05) {
        r.status = "TimeLimitExceeded";
        r.return_code.reset();
      }
    }
  }

  const std::vector<Runner::Step>& steps_;
  MarkerSplitter out_, err_;
  size_t max_;
  size_t out_step_ = 0, err_step_ = 0, started_ = 0;
  bool done_ = false, running_ = false, out_eof_ = false;
  std::string error_, stray_;
  clock::time_point started_at_{}, first_start_{}, last_end_{};
  std::vector<Runner::StepResult> results_;
};

/// SandboxFusion's overall status from the steps (sandbox_api.py parse_run_status).
std::string overall(const std::vector<Runner::StepResult>& steps, std::string& message) {
  for (const auto& s : steps)
    if (s.status == "Error") {
      message = s.err;
      return "SandboxError";
    }
  for (const auto& s : steps)
    if (s.status == "TimeLimitExceeded" || (s.return_code && *s.return_code != 0)) return "Failed";
  return "Success";
}

json sandbox_error(const std::string& message) {
  return {{"status", "SandboxError"}, {"message", message},     {"compile_result", nullptr},
          {"run_result", nullptr},    {"executor_pod_name", nullptr}, {"files", json::object()}};
}

}  // namespace

json Runner::StepResult::to_json() const {
  return {{"status", status},
          {"execution_time", execution_time},
          {"return_code", return_code ? json(*return_code) : json(nullptr)},
          {"stdout", out},
          {"stderr", err}};
}

struct Runner::PoolEntry {
  std::unique_ptr<engine::WarmPool> pool;
  std::vector<std::string> env;  ///< the image's environment (the command's)
  uint64_t last_used = 0;
};

Runner::Runner(RunnerOptions opts) : opts_(std::move(opts)), engine_(opts_.engine) {
  if (opts_.max_concurrency < 1) throw Error("--max-concurrency must be 1 or more");
  if (!runtime::backend_for(opts_.runtime)->supports(runtime::Operation::Warm))
    throw Error("sbx serve --sandbox-fusion runs each request in a warm-pool sandbox, which the '" + opts_.runtime +
                "' runtime does not offer; serve it with --runtime native");
  tmp_root_ = opts_.engine.run_root + "/.sandbox-fusion-" + std::to_string(::getpid());
  fs::mkdir_p(tmp_root_, 0700);
}

void Runner::retire(std::unique_ptr<runtime::WarmSandbox> sb, std::shared_ptr<PoolEntry> pool) {
  {
    std::lock_guard lk(mu_);
    ++retiring_;
  }
  auto done = [this] {
    release_slot();
    // Last touch of *this: the decrement and the wake-up under the lock, so
    // the destructor (waiting for retiring_ == 0) cannot return before both.
    std::lock_guard lk(mu_);
    --retiring_;
    cv_.notify_all();
  };
  try {
    std::thread([this, sb = std::move(sb), pool = std::move(pool), done]() mutable {
      try {
        sb->wait();
      } catch (const Error&) {
      }
      sb.reset();  // (destroys the sandbox)
      pool.reset();
      done();
    }).detach();
  } catch (const std::system_error&) {
    // No thread: the sandbox's handle went with the thread's arguments, and
    // its destructor destroyed it here.
    done();
  }
}

Runner::~Runner() {
  {
    // The sandboxes being torn down go first (their pools may go next).
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return retiring_ == 0; });
  }
  {
    std::lock_guard lk(pools_mu_);
    pools_.clear();
  }
  runtime::remove_tree(tmp_root_);
}

std::string Runner::metrics_text() {
  size_t ready = 0;
  {
    std::lock_guard lk(pools_mu_);
    for (const auto& [key, entry] : pools_) ready += entry->pool->ready();
  }
  return metrics_.text(ready);
}

std::shared_ptr<Runner::PoolEntry> Runner::pool_for(const std::string& language, const std::string& image) {
  // One pool per image: its sandboxes have the default memory bound and get
  // their request's limit when taken (run_job), so many different limits
  // share it.
  const std::string& key = image;
  std::lock_guard lk(pools_mu_);
  auto it = pools_.find(key);
  if (it != pools_.end()) {
    it->second->last_used = ++serial_;
    return it->second;
  }
  oci::ImageRecord img;
  try {
    img = engine_.resolve_or_pull(image, oci::PullPolicy::Never, false, {});
  } catch (const Error& e) {
    throw Error("language '" + language + "' needs image " + image + ", which is not in sbx's store: `sbx pull " +
                image + "` (or import it), or set another image for it in --languages (" + e.what() + ")");
  }
  // The engine's one builder, as every front end: no network, the memory
  // limit, and no command (the pool's sandboxes wait for their request's).
  engine::SandboxOptions so;
  so.image = image;
  so.network = "none";
  so.hold_without_command = true;
  so.allow_host_idmap = false;
  SandboxSpec spec = engine::build_sandbox(so, engine::resolved(engine_, img, image), opts_.runtime).spec;
  // Evict the least recently used pool that no request holds.
  while (pools_.size() >= opts_.max_pools) {
    auto victim = pools_.end();
    for (auto p = pools_.begin(); p != pools_.end(); ++p)
      if (p->second.use_count() == 1 && (victim == pools_.end() || p->second->last_used < victim->second->last_used))
        victim = p;
    if (victim == pools_.end()) break;
    pools_.erase(victim);
  }
  auto e = std::make_shared<PoolEntry>();
  e->env = spec.process.env;
  e->pool = engine_.make_pool(spec, engine::use_userns(spec, engine::UsernsMode::Auto), opts_.pool_size);
  e->last_used = ++serial_;
  pools_[key] = e;
  log::info("serve sandbox-fusion: a warm pool of " + std::to_string(opts_.pool_size) + " for " + image);
  return e;
}

void Runner::acquire_slot() {
  const auto t0 = clock::now();
  std::unique_lock lk(mu_);
  metrics_.queued(1);
  bool ok = cv_.wait_until(lk, t0 + opts_.queue_timeout,
                           [&] { return stopping_ || running_ < opts_.max_concurrency; });
  metrics_.queued(-1);
  if (stopping_) throw Error("the server is stopping");
  if (!ok) throw QueueTimeout{std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0)};
  ++running_;
  metrics_.running(1);
}

void Runner::shutdown() {
  std::lock_guard lk(mu_);
  stopping_ = true;
  for (auto* sb : active_) sb->kill();
  cv_.notify_all();
}

void Runner::release_slot() {
  {
    std::lock_guard lk(mu_);
    --running_;
  }
  metrics_.running(-1);
  cv_.notify_one();
}

namespace {

/// Where a request's time went (--log-level debug): the spans of run_job,
/// in ms from its start, one log line per request.
class Spans {
 public:
  Spans() : on_(log::enabled(log::Level::debug)), t0_(clock::now()), last_(t0_) {}
  void mark(const char* what, clock::time_point now = clock::now()) {
    if (!on_ || now < last_) return;
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.2f", what, std::chrono::duration<double, std::milli>(now - last_).count());
    text_ += buf;
    last_ = now;
  }
  ~Spans() {
    if (on_)
      log::debug("serve sandbox-fusion: request spans (ms):" + text_ + " total=" +
                 std::to_string(std::chrono::duration<double, std::milli>(clock::now() - t0_).count()));
  }

 private:
  bool on_;
  clock::time_point t0_, last_;
  std::string text_;
};

}  // namespace

Runner::JobResult Runner::run_job(const Job& job) {
  Spans spans;
  acquire_slot();
  spans.mark("slot");
  struct SlotGuard {
    Runner* r;
    bool held = true;
    ~SlotGuard() {
      if (held) r->release_slot();
    }
  } slot{this};

  auto entry = pool_for(job.language, job.image);
  metrics_.pool_take(entry->pool->ready() > 0);
  spans.mark("pool");
  // Its refill waits until this request's answer is out (while another
  // sandbox is ready): the start would take CPU from this request.
  std::shared_ptr<void> refill_deferral = entry->pool->defer_refill();
  std::unique_ptr<runtime::WarmSandbox> sb = entry->pool->take();
  spans.mark("take");
  // The request's memory limit, before its files and command exist. (-1, or
  // any value below 1: the default bound the pool's sandboxes have; a
  // sandbox needs a few MB to start at all, so less than kMinMemoryMb is
  // raised to it.)
  if (job.memory_mb > 0)
    runtime::set_sandbox_memory_limit(sb->id(), std::clamp(job.memory_mb, kMinMemoryMb, int64_t{1} << 32) << 20);
  spans.mark("limit");
  {
    std::lock_guard lk(mu_);
    if (stopping_) throw Error("the server is stopping");
    active_.insert(sb.get());
  }
  struct ActiveGuard {
    Runner* r;
    runtime::WarmSandbox* sb;
    ActiveGuard(Runner* r_, runtime::WarmSandbox* sb_) : r(r_), sb(sb_) {}
    ActiveGuard(const ActiveGuard&) = delete;
    ~ActiveGuard() {
      std::lock_guard lk(r->mu_);
      r->active_.erase(sb);
    }
  };
  // (Declared after `sb`: leaves the set before the sandbox is destroyed.)
  std::optional<ActiveGuard> active;
  active.emplace(this, sb.get());

  runtime::PooledCommand cmd;
  const std::string nonce = random_hex(32);
  cmd.args = {"/bin/sh", "-c", driver_script(job.steps, nonce), "sbx-sandbox-fusion"};
  cmd.env = entry->env;
  cmd.files = job.files;
  int in_p[2], out_p[2], err_p[2];
  if (::pipe2(in_p, O_CLOEXEC) < 0) throw_errno("pipe for a sandbox-fusion driver");
  Fd in_r(in_p[0]), in_w(in_p[1]);
  if (::pipe2(out_p, O_CLOEXEC) < 0) throw_errno("pipe for a sandbox-fusion driver");
  Fd out_r(out_p[0]), out_w(out_p[1]);
  if (::pipe2(err_p, O_CLOEXEC) < 0) throw_errno("pipe for a sandbox-fusion driver");
  Fd err_r(err_p[0]), err_w(err_p[1]);
  cmd.stdio[0] = in_r.fd;
  cmd.stdio[1] = out_w.fd;
  cmd.stdio[2] = err_w.fd;
  sb->run(cmd);  // throws sbx::Error (the sandbox died, a file could not be written)
  spans.mark("run");
  in_r.reset();
  out_w.reset();
  err_w.reset();
  ::fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.fd, F_SETFL, O_NONBLOCK);

  double budget = 0;
  for (const auto& s : job.steps) budget += std::max(s.timeout, 0.01);
  const auto deadline = sb->started() + std::chrono::milliseconds(static_cast<int64_t>(budget * 1000)) + kHardMargin;
  DriverReader reader(job.steps, nonce, opts_.max_output);
  bool out_open = true, err_open = true, killed = false;
  char buf[65536];
  while ((out_open || err_open) && !reader.done()) {
    auto now = clock::now();
    if (now >= deadline) {
      killed = true;
      break;
    }
    struct pollfd p[2] = {{out_open ? out_r.fd : -1, POLLIN, 0}, {err_open ? err_r.fd : -1, POLLIN, 0}};
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    int rc = ::poll(p, 2, ms);
    if (rc < 0 && errno != EINTR) throw_errno("poll a sandbox-fusion driver");
    if (rc <= 0) continue;
    if (p[0].revents) {
      ssize_t n = ::read(out_r.fd, buf, sizeof buf);
      if (n > 0) reader.feed_out(buf, static_cast<size_t>(n));
      else if (n == 0) {
        out_open = false;
        reader.out_eof();
      }
    }
    if (p[1].revents) {
      ssize_t n = ::read(err_r.fd, buf, sizeof buf);
      if (n > 0) reader.feed_err(buf, static_cast<size_t>(n));
      else if (n == 0) err_open = false;
    }
  }
  spans.mark("to-first-step", reader.first_start());
  spans.mark("steps", reader.last_end());
  spans.mark("to-done");
  const std::string driver_err = reader.stray();
  JobResult res;
  if (killed) {
    reader.cut("TimeLimitExceeded");
  } else if (!reader.done()) {
    reader.cut("Error");
  }
  if (reader.finished_steps()) {
    // fetch_files through the engine's safe copy, while the driver waits.
    uint64_t total = 0;
    const std::string dir = tmp_root_ + "/" + sb->id().substr(0, 16);
    for (const auto& [name, path] : job.fetch) {
      runtime::remove_tree(dir);
      fs::mkdir_p(dir, 0700);
      try {
        engine_.copy_out(sb->id(), path, dir + "/f");
        struct stat st {};
        if (::lstat((dir + "/f").c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            total + static_cast<uint64_t>(st.st_size) <= opts_.max_fetch) {
          total += static_cast<uint64_t>(st.st_size);
          res.files[name] = oci::base64_encode(fs::read_file(dir + "/f"));
        }
      } catch (const Error& e) {
        // As SandboxFusion: a file that is not there is left out of "files".
        log::info("serve sandbox-fusion: fetch_files " + name + ": " + e.what());
      }
    }
    runtime::remove_tree(dir);
  }
  spans.mark("fetch");
  in_w.reset();
  // Nothing of the request runs past its answer: the kill is here. Waiting
  // for the init (the kernel tears its namespaces down first: milliseconds)
  // and removing the sandbox's cgroups and state are not the answer's
  // business: a thread of their own does them, and the slot stays taken
  // until they are done, so max_concurrency still bounds the sandboxes.
  sb->kill();
  active.reset();
  slot.held = false;
  refill_deferral.reset();  // (before retire: `entry`, which owns the pool, goes with it)
  retire(std::move(sb), std::move(entry));
  spans.mark("kill");
  res.steps = reader.results();
  if (!reader.error().empty()) throw Error("sandbox driver: " + reader.error());
  if (res.steps.empty() && !killed)
    throw Error("the sandbox ended before its command started" + (driver_err.empty() ? std::string() : ": " + driver_err));
  for (auto& s : res.steps)
    if (s.status == "Error" && s.err.empty())
      s.err = "the sandbox ended during the step" + (driver_err.empty() ? std::string() : ": " + driver_err);
  return res;
}

json Runner::run_code(const RunCodeRequest& req) {
  auto lang = opts_.languages.find(req.language);
  if (lang == opts_.languages.end())
    return sandbox_error("language '" + req.language + "' is not in sbx's languages table (" +
                         "add it with sbx serve --languages FILE; docs/sandbox-fusion.md)");
  const Language& l = lang->second;
  Job job;
  job.language = req.language;
  job.image = l.image;
  job.memory_mb = req.memory_limit_mb;
  try {
    for (const auto& [path, content] : req.files) {
      std::string abs = sandbox_path(kWorkDir, path);
      std::string data;
      if (content) {
        try {
          data = oci::base64_decode(*content);
        } catch (const Error&) {
          throw Error("files[\"" + path + "\"] is not valid base64 (RFC 4648, with padding)");
        }
      }
      job.files.emplace_back(abs, data);
    }
    job.files.emplace_back(std::string(kWorkDir) + "/" + l.file, req.code);
    job.files.emplace_back(std::string(kCtlDir) + "/stdin", req.stdin_data.value_or(""));
    for (const auto& f : req.fetch_files) job.fetch.emplace_back(f, sandbox_path(kWorkDir, f));
  } catch (const Error& e) {
    return sandbox_error(e.what());
  }
  if (l.compile) job.steps.push_back({"c", *l.compile, req.compile_timeout, "/dev/null"});
  Step run{"r", l.run, req.run_timeout, std::string(kCtlDir) + "/stdin"};
  run.argv.insert(run.argv.end(), req.args.begin(), req.args.end());
  job.steps.push_back(run);

  JobResult r;
  try {
    r = run_job(job);
  } catch (const Error& e) {
    return sandbox_error(e.what());
  }
  json out = {{"status", "Success"},       {"message", ""},          {"compile_result", nullptr},
              {"run_result", nullptr},     {"executor_pod_name", nullptr}, {"files", json::object()}};
  size_t i = 0;
  if (l.compile && i < r.steps.size()) out["compile_result"] = r.steps[i++].to_json();
  if (i < r.steps.size()) out["run_result"] = r.steps[i].to_json();
  std::string message;
  out["status"] = overall(r.steps, message);
  out["message"] = message;
  for (const auto& [k, v] : r.files) out["files"][k] = v;
  return out;
}

namespace {

/// The cells' driver of /run_jupyter: one Python process keeps its globals
/// between cells; each cell's fds 1 and 2 go to files (so output of child
/// processes is caught too); the value of a cell's last expression goes to
/// "display" as {"text/plain": repr}, an exception to "error" as Jupyter's
/// {ename, evalue, traceback} and the next cell runs; a cell past
/// cell_timeout (SIGALRM) ends the run as TimeLimitExceeded. The result is
/// one JSON object on the driver's own stdout.
constexpr const char* kJupyterDriver = R"PY(
import ast, json, os, signal, sys, tempfile, traceback
cells = json.load(open(sys.argv[1]))
cell_timeout = float(sys.argv[2])
out = os.fdopen(os.dup(1), "w")
class CellTimeout(BaseException):
    pass
def on_alarm(signum, frame):
    raise CellTimeout()
signal.signal(signal.SIGALRM, on_alarm)
ns = {"__name__": "__main__"}
results, status = [], "Finished"
for i, src in enumerate(cells):
    display, error = [], []
    fo, fe = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(fo.fileno(), 1); os.dup2(fe.fileno(), 2)
    timed_out = False
    try:
        if cell_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, cell_timeout)
        tree = ast.parse(src, "<cell-%d>" % i, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell-%d>" % i, "exec"), ns)
        if last is not None:
            value = eval(compile(last, "<cell-%d>" % i, "eval"), ns)
            if value is not None:
                display.append({"text/plain": repr(value)})
    except CellTimeout:
        timed_out = True
    except BaseException as e:
        error.append({"ename": type(e).__name__, "evalue": str(e),
                      "traceback": traceback.format_exception(type(e), e, e.__traceback__)})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            sys.stdout.flush(); sys.stderr.flush()
        except Exception:
            pass
        os.dup2(saved[0], 1); os.dup2(saved[1], 2)
        os.close(saved[0]); os.close(saved[1])
    limit = 4 << 20
    fo.seek(0); fe.seek(0)
    results.append({"stdout": fo.read(limit).decode("utf-8", "replace"),
                    "stderr": fe.read(limit).decode("utf-8", "replace"),
                    "display": display, "error": error})
    if timed_out:
        status = "TimeLimitExceeded"
        break
json.dump({"status": status, "cells": results}, out)
out.flush()
)PY";

}  // namespace

json Runner::run_jupyter(const RunJupyterRequest& req) {
  json out = {{"status", "Success"}, {"message", ""},   {"driver", nullptr},
              {"cells", json::array()}, {"executor_pod_name", nullptr}, {"files", json::object()}};
  auto error = [&](const std::string& why) {
    out["status"] = "SandboxError";
    out["message"] = why;
    return out;
  };
  auto lang = opts_.languages.find("python");
  if (lang == opts_.languages.end()) return error("run_jupyter runs in the python language's image: add \"python\" to --languages");
  Job job;
  job.language = "python";
  job.image = lang->second.image;
  job.memory_mb = req.memory_limit_mb;
  const std::string driver = std::string(kCtlDir) + "/jupyter_driver.py", cells = std::string(kCtlDir) + "/cells.json";
  try {
    for (const auto& [path, content] : req.files) {
      std::string abs = sandbox_path(kWorkDir, path);
      try {
        job.files.emplace_back(abs, content ? oci::base64_decode(*content) : std::string());
      } catch (const Error&) {
        throw Error("files[\"" + path + "\"] is not valid base64 (RFC 4648, with padding)");
      }
    }
    for (const auto& f : req.fetch_files) job.fetch.emplace_back(f, sandbox_path(kWorkDir, f));
  } catch (const Error& e) {
    return error(e.what());
  }
  job.files.emplace_back(driver, kJupyterDriver);
  job.files.emplace_back(cells, json(req.cells).dump(-1, ' ', false, json::error_handler_t::replace));
  char ct[64];
  std::snprintf(ct, sizeof ct, "%.3f", std::max(req.cell_timeout, 0.0));
  job.steps.push_back({"r", {"python3", driver, cells, ct}, req.total_timeout > 0 ? req.total_timeout : 45, "/dev/null"});
  JobResult r;
  try {
    r = run_job(job);
  } catch (const Error& e) {
    return error(e.what());
  }
  StepResult d = r.steps.empty() ? StepResult{"Error", 0, std::nullopt, "", ""} : r.steps[0];
  json result;
  if (d.status == "Finished") {
    try {
      result = json::parse(d.out);
    } catch (const std::exception&) {
      d.status = "Error";
    }
  }
  std::string status = d.status;
  if (status == "Finished" && result.value("status", "Finished") != "Finished") status = result["status"];
  StepResult shown = d;
  shown.status = status;
  shown.out.clear();
  out["driver"] = shown.to_json();
  if (status != "Finished") {
    // As SandboxFusion: the cells are given only when all of them ran.
    out["status"] = d.status == "Error" ? "SandboxError" : "Failed";
    if (d.status == "Error") out["message"] = d.err.empty() ? "the cells' driver failed" : d.err;
    return out;
  }
  out["cells"] = result.value("cells", json::array());
  for (const auto& [k, v] : r.files) out["files"][k] = v;
  return out;
}

}  // namespace sbx::server::sandbox_fusion
