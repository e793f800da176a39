// Warm sandboxes: a sandbox set up ahead of its command — namespaces, cgroup,
// network, root file system, everything but the command — that then runs
// exactly one command (runtime/backend.h Backend::start_warm; the engine's
// warm pool, engine/pool.h, keeps them ready). Never reused, never shared:
// its isolation is a fresh sandbox's.
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// The one command of a warm sandbox.
struct PooledCommand {
  std::vector<std::string> args;  ///< argv; args[0] found on the sandbox's PATH
  std::vector<std::string> env;   ///< the whole environment ("K=V"); HOME added as for start()
  /// Files written (mode 0644, owned by the sandbox's root, parents created)
  /// before the command runs: absolute path in the sandbox → content.
  std::vector<std::pair<std::string, std::string>> files;
  int stdio[3] = {-1, -1, -1};  ///< the command's fds 0, 1, 2 (sbx keeps its copies)
};

/// A handle on one warm sandbox. Destroying it kills the sandbox and removes
/// everything it made (no throw). Until run() it dies with the thread that
/// started it (the pool's refill thread).
class WarmSandbox {
 public:
  virtual ~WarmSandbox() = default;
  WarmSandbox() = default;
  WarmSandbox(const WarmSandbox&) = delete;
  WarmSandbox& operator=(const WarmSandbox&) = delete;

  /// Its id (64 hex chars).
  virtual const std::string& id() const noexcept = 0;
  /// Gives it its one command: returns once the command has been exec'd, and
  /// its timeout and wall time count from then (started()). Errors:
  /// sbx::Error with 127/126 (not found / not executable), 125 (a file could
  /// not be written, the sandbox died, or it already ran its command).
  virtual void run(const PooledCommand& cmd) = 0;
  /// When run() started the command (before: when the sandbox was started).
  virtual std::chrono::steady_clock::time_point started() const noexcept = 0;
  /// A file descriptor, owned by the handle, that becomes readable (poll(2)
  /// POLLIN) once the sandbox has ended.
  virtual int ended_fd() const noexcept = 0;
  /// Kills every process of the sandbox (SIGKILL). No throw.
  virtual void kill() noexcept = 0;
  /// The user-namespace id map its files are written with (container id ->
  /// host id; the same for uids and gids); empty: host ids.
  virtual std::vector<IdMapping> id_map() const = 0;
  /// Waits until the command has ended (`timeout` 0: no limit; counted from
  /// started(), then the sandbox is killed and the status says timed_out)
  /// and returns how it ended, with its resource usage. `forward_signals`:
  /// INT, TERM, HUP, … the caller receives meanwhile go to the command (a
  /// command line's Ctrl-C; ExitStatus::forwarded_signal says which); else
  /// the caller's signals are its own. Throws sbx::Error only on a failure of
  /// sbx itself.
  virtual ExitStatus wait(std::chrono::milliseconds timeout = {}, bool forward_signals = false) = 0;
};

}  // namespace sbx::runtime
