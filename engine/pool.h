// The warm pool: sandboxes set up ahead of time — namespaces,
// cgroup, network, root file system, everything but the command — each
// waiting for exactly one command (runtime/warm_sandbox.h, made by the
// backend's start_warm: native sandboxes; gVisor refuses). A pooled sandbox
// runs one command and is then destroyed: never reused, never shared, so its
// isolation is a fresh sandbox's. Background threads refill the pool to the
// size the caller asked.
//
// Nothing outlives the pool's owner: each pooled init dies with the thread
// that made it (PR_SET_PDEATHSIG; those threads live as long as the pool).
// What the kernel does not remove by itself (the state dirs, cgroups, id
// ranges, network leases) a guardian process removes: forked with the pool,
// it learns each sandbox id through a pipe and, when that pipe ends without
// the pool's "done" (the owner died, e.g. SIGKILL), removes those sandboxes
// (its backend's remove) and exits. Their state.json also
// names the owner (owner_pid), so `sbx gc` removes anything left after that.
//
// Used by `sbx batch` (engine/batch.cpp, --pool); the API server can keep
// one per image + options (pool_key) through Engine::make_pool.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backend.h"
#include "spec/sandbox_spec.h"

namespace sbx::engine {

struct PoolOptions {
  /// The sandboxes' spec: image resolved, its config applied, limits,
  /// network (the front end's). process.args is ignored; id and hostname
  /// are new for each sandbox. A backend that supports Operation::Warm
  /// (spec.runtime), no terminal.
  SandboxSpec spec;
  bool userns = true;          ///< own user namespace (runtime/linux/userns.h)
  size_t size = 1;             ///< sandboxes kept ready (and threads refilling)
  std::string run_root = "/run/sbx";
};

/// What makes two specs interchangeable for a pool: image, limits, network,
/// mounts, user, capabilities, read-only root, user namespace — everything
/// fixed before the command. Sandboxes of one key may serve any command.
std::string pool_key(const SandboxSpec& spec, bool userns);

class WarmPool {
 public:
  /// Starts the refill threads (none is ready yet). Throws sbx::Error for a
  /// spec a pool cannot hold (its backend's refusal of Operation::Warm —
  /// gVisor —, a terminal, size 0).
  explicit WarmPool(PoolOptions opts);
  /// Stops the refill and destroys every sandbox still waiting. No throw.
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  /// A ready sandbox, taken out of the pool (the refill makes another);
  /// blocks until one is ready. The caller gives it its command
  /// (WarmSandbox::run), waits (WarmSandbox::wait) and destroys it. Throws
  /// the sbx::Error of the last failed refill (e.g. the overlay mount
  /// failed), once per failure; the refill then tries again.
  std::unique_ptr<runtime::WarmSandbox> take();

  /// Holds back the refill while the caller's request runs, until the
  /// returned token is released (destroyed): a sandbox start costs CPU that
  /// the request in flight would lose on a small host. Only while the pool
  /// still has a sandbox ready: an empty pool refills at once, so take()
  /// never waits for a deferral. Take the token before take(), release it
  /// when the request's answer is out. No throw.
  std::shared_ptr<void> defer_refill();

  /// take(), run_pooled(cmd), wait(timeout), destroy(): one command, to
  /// its end. Errors as run_pooled (127/126 for the command, 125 else).
  ExitStatus run(const runtime::PooledCommand& cmd, std::chrono::milliseconds timeout);

  const std::string& key() const { return key_; }
  /// Sandboxes ready now.
  size_t ready() const;

 private:
  void refill();
  void start_guardian();
  PoolOptions opts_;
  std::unique_ptr<runtime::Backend> backend_;
  std::string key_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<runtime::WarmSandbox>> ready_;
  size_t starting_ = 0;
  size_t deferring_ = 0;  ///< defer_refill() tokens alive
  std::string error_;  ///< the last refill failure, until take() reports it
  int error_code_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
  pid_t guardian_ = -1;
  int guardian_fd_ = -1;  ///< write end: sandbox ids, one a line; "Q" when done
};

}  // namespace sbx::engine
