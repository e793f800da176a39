// sbx batch: many one-shot sandboxes from a JSON-lines task file, N at a time
// (issue 19). Part of the engine facade (engine/engine.h Engine::batch), so
// the CLI and the API server share it.
//
// Task line (one JSON object per line; blank lines are skipped):
//   {"id": "t1",                 required, unique: names the result
//    "image": "python",          optional: else BatchRequest::image
//    "cmd": ["python3","x.py"],  argv; or
//    "script": "echo hi",        run by /bin/sh -c
//    "stdin": "text",            optional (else /dev/null)
//    "env": {"K": "V"},          added to the image's environment
//    "files": {"/work/x.py": "text", "/work/b": {"base64": "…"}},
//    "timeout": 10 | "10s",      seconds or a duration; else the request's
//    "memory": "256m" | bytes, "pids_limit": 64, "cpus": 0.5,
//    "network": "none" | "private" | "host"}   else the base spec's (--network);
//                                 private has the batch's egress options when
//                                 the batch is private, else open egress
// Result line (one per task, in the order tasks finish):
//   {"id", "line", "exit_code", "end_reason" (exit, signal, timeout, oom,
//    failed: sbx could not run it, invalid: the task line is malformed),
//    "error" (failed/invalid: why), "stdout", "stderr", "stdout_truncated",
//    "stderr_truncated", "duration_ms", "cpu_ms", "max_rss_bytes",
//    "io_read_bytes", "io_write_bytes", "pooled" (true: a warm-pool sandbox)}
//
// With BatchRequest::pool, a task runs in a warm-pool sandbox (engine/pool.h)
// that this process gives the command, its files (written in the sandbox)
// and the fds; it runs that task only and is destroyed. Otherwise
// each task runs in a fresh sandbox (Engine::run) in a worker process of its
// own (fork: the sandbox inherits the worker's stdin/stdout/stderr, which
// are the task's stdin and pipes to the batch), so tasks share nothing. A
// stop request (SIGINT/SIGTERM/SIGHUP to the batch) starts no new task and
// interrupts the running ones (their sandboxes are killed and removed); the
// tasks it interrupted get no result line, so --resume runs them again.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "engine/sandbox_options.h"
#include "engine/userns.h"
#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// Progress after each finished task.
struct BatchProgress {
  size_t total = 0;    ///< tasks in the file (resumed ones included)
  size_t done = 0;     ///< with a result line (this run), resumed ones not counted
  size_t failed = 0;   ///< of those: exit code != 0 or not exit
  size_t skipped = 0;  ///< already in the output (--resume)
  size_t running = 0;
  std::chrono::milliseconds elapsed{0};
};

struct BatchRequest {
  std::string tasks;   ///< path of the JSON-lines file; "-": `input`
  /// The task lines when `tasks` is "-" (the CLI passes its stdin): the
  /// engine reads no stream of its own.
  std::istream* input = nullptr;
  std::string output;  ///< results appended here (JSON lines); empty: on_result only
  bool resume = false; ///< skip ids that have a result line in `output` already
  int parallel = 1;    ///< sandboxes at a time (-P)
  /// The batch's options (the front end's flags, translated: the image for
  /// tasks without "image", network and egress options, memory, timeout,
  /// runtime, runsc, userns, pull), the base of every task. A task line's
  /// image, argv, env, stdin, limits, timeout and network go over them
  /// (batch_task_options) and the engine's one builder (build_sandbox)
  /// makes each task's sandbox, as for `sbx run`. Each image is resolved
  /// once (an unknown image fails every task of it). A private network is
  /// made per task, pooled ones ahead of their task. Userns: each task's
  /// sandbox gets its own user namespace as use_userns decides
  /// (engine/userns.h: not with the host's network).
  SandboxOptions options;
  /// Warm pool (engine/pool.h): sandboxes kept set up per image, each
  /// waiting for one task (native tasks without limits of their own; the
  /// others get a fresh sandbox). 0: every task a fresh sandbox.
  size_t pool = 0;
  size_t max_output = 1 << 20;           ///< bytes of stdout and of stderr kept per task
  std::function<void(const std::string& json_line)> on_result;  ///< each result line (optional)
  std::function<void(const BatchProgress&)> progress;            ///< optional
  /// What the builder warns of (an rlimit clamped to the host's), each
  /// distinct warning once (optional).
  std::function<void(const std::string&)> on_warning;
};

/// The options of the sandbox for one task line `line` (parsed as the batch
/// parses it) over the batch's `base`: the line's "image" (else base.image),
/// "cmd" or "script" as the whole argv (the image's Entrypoint is not put
/// before it), "env" added over the image's, "stdin", "timeout", "memory",
/// "pids_limit", "cpus", and "network" (another network than the base's
/// drops the base's egress options unless both are private). What the
/// engine hands to build_sandbox for that task. Throws sbx::Error
/// (InvalidArgument) for a malformed line, with the message its "invalid"
/// result carries.
SandboxOptions batch_task_options(const SandboxOptions& base, const std::string& line);

struct BatchSummary {
  BatchProgress progress;
  bool interrupted = false;  ///< a signal stopped it; unfinished tasks have no result
  int signal = 0;            ///< which
};

}  // namespace sbx::engine
