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

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/auth_config.h"
#include "runtime/state.h"
#include "server/docker_spec.h"

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

/// The driver (runner.h) for `steps`.
std::string driver_script(const std::vector<Runner::Step>& steps, size_t max_output) {
  std::ostringstream s;
  s << "D=" << kCtlDir << "\nM=" << max_output << "\n"
    << "mkdir -p " << kWorkDir << "; cd " << kWorkDir << " || { echo 'X cannot enter the work dir " << kWorkDir << "'; exit 0; }\n"
    << "step() {\n"
       "  t=$1; s=$2; i=$3; shift 3\n"
       "  mkfifo \"$D/$t.o\" \"$D/$t.e\" || { echo 'X mkfifo failed in the sandbox'; exit 0; }\n"
       "  { head -c $M > \"$D/$t.out\"; cat > /dev/null; } < \"$D/$t.o\" &\n"
       "  { head -c $M > \"$D/$t.err\"; cat > /dev/null; } < \"$D/$t.e\" &\n"
       "  echo \"S $t\"\n"
       "  timeout -s KILL \"$s\" \"$@\" < \"$i\" > \"$D/$t.o\" 2> \"$D/$t.e\"\n"
       "  rc=$?\n"
       "  echo \"T $t $rc\"\n"
       "  wait\n"
       "  echo \"E $t $rc $(wc -c < \"$D/$t.out\") $(wc -c < \"$D/$t.err\")\"\n"
       "  cat \"$D/$t.out\" \"$D/$t.err\"\n"
       "  return $rc\n"
       "}\n";
  for (const auto& st : steps) {
    s << "step " << st.tag << " " << seconds_arg(st.timeout) << " " << sh_quote(st.stdin_path);
    for (const auto& a : st.argv) s << " " << sh_quote(a);
    s << " || { echo F; read x; exit 0; }\n";
  }
  s << "echo F\nread x\n";
  return s.str();
}

/// What the driver reported, read from its stdout.
class DriverReader {
 public:
  explicit DriverReader(const std::vector<Runner::Step>& steps) : steps_(steps) {}

  /// Consumes bytes; returns true once "F" was read.
  bool feed(const char* p, size_t n) {
    buf_.append(p, n);
    for (;;) {
      if (need_ > 0) {
        if (buf_.size() < need_) return false;
        auto& r = results_.back();
        r.out = buf_.substr(0, out_len_);
        r.err = buf_.substr(out_len_, need_ - out_len_);
        buf_.erase(0, need_);
        need_ = 0;
        continue;
      }
      auto nl = buf_.find('\n');
      if (nl == std::string::npos) return false;
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      std::istringstream in(line);
      std::string kind, tag;
      in >> kind;
      if (kind == "F") {
        done_ = true;
        return true;
      }
      if (kind == "X") {
        error_ = line.size() > 2 ? line.substr(2) : "the driver failed";
        continue;
      }
      in >> tag;
      if (kind == "S") {
        results_.push_back({});
        results_.back().status = "Running";
        started_ = clock::now();
        running_ = true;
      } else if (kind == "T" && running_) {
        int rc = 0;
        in >> rc;
        auto& r = results_.back();
        r.execution_time = std::chrono::duration<double>(clock::now() - started_).count();
        r.return_code = rc;
        r.status = "Finished";
        running_ = false;
        const Runner::Step& st = steps_.at(results_.size() - 1);
        // `timeout -s KILL` answers 137 for the command it killed.
        if ((rc == 137 || rc == 124) && r.execution_time >= st.timeout - 0.05) {
          r.status = "TimeLimitExceeded";
          r.return_code.reset();
        }
      } else if (kind == "E" && !results_.empty()) {
        int rc = 0;
        uint64_t ol = 0, el = 0;
        in >> rc >> ol >> el;
        out_len_ = ol;
        need_ = ol + el;
        if (need_ == 0) results_.back().out.clear(), results_.back().err.clear();
      }
    }
  }

  /// At the hard deadline or an early end: the step still running (if any)
  /// ended as `status`.
  void cut(const std::string& status) {
    if (running_ && !results_.empty()) {
      auto& r = results_.back();
      r.status = status;
      r.execution_time = std::chrono::duration<double>(clock::now() - started_).count();
      running_ = false;
    }
  }

  bool done() const { return done_; }
  const std::string& error() const { return error_; }
  std::vector<Runner::StepResult>& results() { return results_; }

 private:
  const std::vector<Runner::Step>& steps_;
  std::string buf_;
  size_t need_ = 0, out_len_ = 0;
  bool done_ = false, running_ = false;
  std::string error_;
  clock::time_point started_{};
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
  tmp_root_ = opts_.engine.run_root + "/.sandbox-fusion-" + std::to_string(::getpid());
  fs::mkdir_p(tmp_root_, 0700);
}

Runner::~Runner() {
  {
    std::lock_guard lk(pools_mu_);
    pools_.clear();
  }
  runtime::remove_tree(tmp_root_);
}

std::shared_ptr<Runner::PoolEntry> Runner::pool_for(const std::string& language, const std::string& image,
                                                   int64_t memory_mb) {
  const std::string key = image + "\n" + std::to_string(memory_mb);
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
  json hc = {{"NetworkMode", "none"}};
  if (memory_mb > 0) hc["Memory"] = memory_mb << 20;
  json cfg = {{"Image", image}, {"Cmd", json::array({"true"})}, {"HostConfig", hc}};
  SandboxSpec spec = spec_from_docker(cfg, img, engine_.layer_dirs(img), runtime::new_sandbox_id(), "", opts_.runtime);
  spec.process.args.clear();
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
  log::info("serve sandbox-fusion: a warm pool of " + std::to_string(opts_.pool_size) + " for " + image +
            (memory_mb > 0 ? " (" + std::to_string(memory_mb) + " MB)" : ""));
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

Runner::JobResult Runner::run_job(const Job& job) {
  acquire_slot();
  struct SlotGuard {
    Runner* r;
    ~SlotGuard() { r->release_slot(); }
  } slot{this};

  auto entry = pool_for(job.language, job.image, job.memory_mb);
  metrics_.pool_take(entry->pool->ready() > 0);
  std::unique_ptr<runtime::WarmSandbox> sb = entry->pool->take();
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
  cmd.args = {"/bin/sh", "-c", driver_script(job.steps, opts_.max_output), "sbx-sandbox-fusion"};
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
  in_r.reset();
  out_w.reset();
  err_w.reset();
  ::fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.fd, F_SETFL, O_NONBLOCK);

  double budget = 0;
  for (const auto& s : job.steps) budget += std::max(s.timeout, 0.01);
  const auto deadline = sb->started() + std::chrono::milliseconds(static_cast<int64_t>(budget * 1000)) + kHardMargin;
  DriverReader reader(job.steps);
  std::string driver_err;
  bool out_open = true, err_open = true, killed = false;
  char buf[65536];
  while (out_open && !reader.done()) {
    auto now = clock::now();
    if (now >= deadline) {
      killed = true;
      break;
    }
    struct pollfd p[2] = {{out_r.fd, POLLIN, 0}, {err_open ? err_r.fd : -1, POLLIN, 0}};
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    int rc = ::poll(p, 2, ms);
    if (rc < 0 && errno != EINTR) throw_errno("poll a sandbox-fusion driver");
    if (rc <= 0) continue;
    if (p[0].revents) {
      for (;;) {
        ssize_t n = ::read(out_r.fd, buf, sizeof buf);
        if (n > 0) {
          if (reader.feed(buf, static_cast<size_t>(n))) break;
          continue;
        }
        if (n == 0) out_open = false;
        break;
      }
    }
    if (p[1].revents) {
      ssize_t n = ::read(err_r.fd, buf, sizeof buf);
      if (n > 0 && driver_err.size() < 4096) driver_err.append(buf, static_cast<size_t>(std::min<ssize_t>(n, 4096)));
      if (n == 0) err_open = false;
    }
  }
  JobResult res;
  if (killed) {
    reader.cut("TimeLimitExceeded");
  } else if (!reader.done()) {
    reader.cut("Error");
  }
  if (reader.done()) {
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
  in_w.reset();
  sb->kill();
  try {
    sb->wait();
  } catch (const Error&) {
  }
  active.reset();
  sb.reset();
  res.steps = std::move(reader.results());
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
