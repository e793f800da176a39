// Runs SandboxFusion requests, each in a fresh sandbox of its own taken from
// a warm pool (engine/pool.h) per language image: never reused, no network,
// destroyed once the request is answered. The pool's sandboxes have the
// default memory bound; a request's memory_limit_MB is written to its
// sandbox's cgroup when the sandbox is taken, before its files and command
// (runtime/linux/cgroup_memory_limit.h), so requests with many different
// limits share one pool.
//
// In the sandbox, one command runs: a small POSIX sh driver that runs the
// compile step, then the run step, each under `timeout -s KILL` from the
// image (nothing else but shell builtins), with the steps' stdout and stderr
// on the driver's own, which are pipes to sbx. Between steps the driver
// writes markers carrying a random nonce of the request ("\nNONCE S TAG",
// "\nNONCE T TAG RC" on stderr, "\nNONCE" on stdout, "\nNONCE F" when done);
// sbx splits the streams at them, keeps at most RunnerOptions::max_output
// bytes of each step's stdout and stderr (the rest is read and dropped, so
// the program never blocks on a full pipe) and times each step from its S
// to its T marker. (A program that prints the nonce, which it could read
// from /proc/1/cmdline, confuses only its own result.) The driver then waits
// on its stdin while sbx reads `fetch_files` out through the engine's safe
// copy (Engine::copy_out: resolved in the sandbox's root by the kernel).
// A sandbox that overruns its steps' time-outs by kHardMargin is killed.
//
// A limit on sandboxes at once (max_concurrency) with a queue before it: a
// request that cannot start within queue_timeout gets 504 (verl retries only
// on 504 and gives up after compile + run + 10 s).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/sandbox_fusion/languages.h"
#include "server/sandbox_fusion/metrics.h"
#include "server/sandbox_fusion/request.h"

namespace sbx::server::sandbox_fusion {

struct RunnerOptions {
  engine::Config engine;
  std::string runtime = "native";  ///< backend of the sandboxes (one with warm sandboxes)
  LanguageTable languages = default_languages();
  int max_concurrency = 4;         ///< sandboxes running requests at once
  std::chrono::milliseconds queue_timeout{8000};  ///< most wait for a slot; then 504
  size_t pool_size = 2;            ///< sandboxes kept ready per image
  size_t max_pools = 8;            ///< pools kept; the least recently used idle one goes
  size_t max_output = 4u << 20;    ///< bytes of stdout and of stderr kept per step
  uint64_t max_fetch = 64u << 20;  ///< bytes of all fetched files of one request
};

/// The slot wait ran out (answered 504).
struct QueueTimeout {
  std::chrono::milliseconds waited;
};

class Runner {
 public:
  explicit Runner(RunnerOptions opts);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// /run_code: SandboxFusion's RunCodeResponse as JSON. Problems of the
  /// request that validation does not see (bad base64, a path out of the
  /// work dir, a language without an image) and of the sandbox are
  /// {"status": "SandboxError", "message": why}. Throws QueueTimeout.
  nlohmann::json run_code(const RunCodeRequest& req);

  /// /run_jupyter: RunJupyterResponse as JSON (cells run by a Python driver
  /// of sbx's in the python language's image). Throws QueueTimeout.
  nlohmann::json run_jupyter(const RunJupyterRequest& req);

  /// The server stops: kills the sandboxes of running requests (they are
  /// answered at once) and refuses new ones; queued ones get SandboxError.
  void shutdown();

  Metrics& metrics() { return metrics_; }
  /// The text of /metrics, with the warm pools' ready sandboxes.
  std::string metrics_text();
  const RunnerOptions& options() const { return opts_; }

  /// One step of a job: its argv, time-out (s) and stdin file in the sandbox.
  struct Step {
    std::string tag;
    std::vector<std::string> argv;
    double timeout = 10;
    std::string stdin_path = "/dev/null";
  };
  /// What a step did, as SandboxFusion's CommandRunResult.
  struct StepResult {
    std::string status;  ///< Finished, Error, TimeLimitExceeded
    double execution_time = 0;
    std::optional<int> return_code;
    std::string out, err;
    nlohmann::json to_json() const;
  };
  struct Job {
    std::string language;  ///< names the image in errors
    std::string image;
    int64_t memory_mb = -1;
    std::vector<std::pair<std::string, std::string>> files;  ///< absolute path in the sandbox → content
    std::vector<Step> steps;  ///< each runs only when the one before returned 0
    std::vector<std::pair<std::string, std::string>> fetch;  ///< (request path, absolute path)
  };
  struct JobResult {
    std::vector<StepResult> steps;  ///< the steps that ran (a TLE or Error one last)
    std::map<std::string, std::string> files;  ///< request path → base64
  };
  /// Runs `job` in a fresh pooled sandbox (after a slot). Throws sbx::Error
  /// for a problem of the sandbox (answered SandboxError), QueueTimeout.
  JobResult run_job(const Job& job);

 private:
  struct PoolEntry;
  std::shared_ptr<PoolEntry> pool_for(const std::string& language, const std::string& image);
  void acquire_slot();
  void release_slot();
  /// Waits for the killed sandbox `sb` to end and destroys it on a thread of
  /// its own, then releases the request's slot. No throw.
  void retire(std::unique_ptr<runtime::WarmSandbox> sb, std::shared_ptr<PoolEntry> pool);

  RunnerOptions opts_;
  engine::Engine engine_;
  Metrics metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int retiring_ = 0;  ///< sandboxes being torn down after their answer (guarded by mu_)
  bool stopping_ = false;
  std::set<runtime::WarmSandbox*> active_;  ///< sandboxes running requests (guarded by mu_)
  uint64_t serial_ = 0;
  std::mutex pools_mu_;  ///< guards pools_ (held while a pool is made)
  std::map<std::string, std::shared_ptr<PoolEntry>> pools_;
  std::string tmp_root_;  ///< fetched files pass through here
};

}  // namespace sbx::server::sandbox_fusion
