// The process side of every exec stream of sbx serve (Docker's exec start,
// /sbx/v1's exec, E2B's process Start): pipes for the process's stdout and
// stderr (never the server's own fds), its stdin, a cancel pipe
// (runtime::ExecRequest::cancel_fd: once written, the process is SIGKILLed),
// Engine::exec on its own thread, and the poll step that moves its output to
// the API's writer. Each API keeps only its own wire: frames, the client's
// input, its process table.
#pragma once
#include <poll.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/fd.h"

namespace sbx::engine {
class Engine;
struct ExecRequest;
}  // namespace sbx::engine

namespace sbx::server {

/// How an exec run by an ExecPump ended.
struct ExecEnd {
  int exit_code = 0;       ///< the process's (Engine::exec: 124 time-out, 126/127, 128+N)
  bool timed_out = false;  ///< its request's timeout fired
  std::string failure;     ///< the engine's error (it could not start, …); "" when it ran
  int failure_code = 0;    ///< that error's exit code (kExitNotFound, …); exit_code too
};

class ExecPump {
 public:
  struct Options {
    bool stdin = false;         ///< a pipe for the process's stdin (else /dev/null)
    bool merge_stderr = false;  ///< stderr on the stdout pipe (one stream, as a terminal gives)
    bool discard_output = false;  ///< stdout and stderr to /dev/null (a detached exec)
  };
  /// Makes the pipes. Throws sbx::Error when a pipe cannot be made.
  explicit ExecPump(Options o);
  /// Cancels a process still running and waits for the exec thread.
  ~ExecPump();
  ExecPump(const ExecPump&) = delete;
  ExecPump& operator=(const ExecPump&) = delete;

  /// Points `req`'s stdin/stdout/stderr and cancel_fd at the pump's ends
  /// (and `interactive` with a stdin pipe); forward_signals off (the server's
  /// signals are its own).
  void wire(engine::ExecRequest& req);
  /// Runs engine.exec(req) on the pump's thread; `engine` and `req` must live
  /// until join() (or the destructor).
  void start(engine::Engine& engine, const engine::ExecRequest& req);

  /// The write end of the process's stdin (an empty Fd without one): the API
  /// writes the client's input to it and closes it for EOF.
  Fd& stdin_w() noexcept { return in_w_; }
  /// The cancel pipe's write end, for a list that cancels every exec at
  /// shutdown; cancel() writes it.
  int cancel_fd() const noexcept { return cancel_.w.fd; }
  /// SIGKILLs the process (once; no-op after it ended).
  void cancel();

  /// Adds the output pipes still open and (until the exit) the exec's end to
  /// `pfd` from index `n`; returns the new count (at most n + 3).
  int add_pollfds(struct pollfd* pfd, int n);
  /// After poll(2): reads what the outputs hold into `sink` (stream 1 stdout,
  /// 2 stderr; false: stop sending, the reader is gone) and notes the exit.
  /// Returns false once sink returned false.
  bool handle(const struct pollfd* pfd, const std::function<bool(int stream, std::string_view data)>& sink);
  /// The poll time-out: -1 while the process runs; 200 ms after its exit (a
  /// poll that times out then means a process it left holds the output open:
  /// the stream is done).
  int poll_timeout_ms() const noexcept { return exited_ ? 200 : -1; }
  bool exited() const noexcept { return exited_; }
  /// Exited, and both outputs at EOF.
  bool done() const noexcept { return exited_ && out_r_.fd < 0 && err_r_.fd < 0; }

  /// Waits for the exec thread; how it ended.
  ExecEnd join();

 private:
  Options o_;
  Fd in_r_, in_w_, out_r_, out_w_, err_r_, err_w_, devnull_;
  Pipe cancel_{"the exec's cancel pipe"}, done_{"the exec's end pipe"};
  std::thread thread_;
  ExecEnd end_;
  bool exited_ = false, cancelled_ = false;
  int i_out_ = -1, i_err_ = -1, i_done_ = -1;
};

}  // namespace sbx::server
