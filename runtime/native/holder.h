// The holder: pid 1 of a long-lived (created) sandbox. It is what keeps the
// sandbox alive — there is no daemon and no other per-sandbox host process —
// and it enforces the sandbox's own limits, so they fire even when every sbx
// process that touched the sandbox is gone:
//   - reaps every process re-parented to it (orphaned execs included);
//   - forwards stop/kill signals to the first process (or, with none, ends);
//   - --timeout: a hard lifetime; --idle-timeout: no exec activity (the mtime
//     of STATE_DIR/activity, which `sbx exec` touches) for that long;
//   - copies the first process's stdout and stderr into STATE_DIR/ctr.log
//     as records that keep the stream (runtime/sandbox_log.h; bounded:
//     ctr.log + ctr.log.1, each at most kLogRotateBytes);
//   - records why the sandbox ended in STATE_DIR/end (runtime/state.h) and
//     then kills every process in the pid namespace (kill(-1, SIGKILL)).
// It runs as its own small static program, sbx-init (tools/sbx-init.cpp),
// which the sandbox's init execs once the sandbox is set up
// (runtime/native/init_binary.h), so an idle sandbox does not keep a fork of
// sbx resident.
// It reaches the state dir only through a directory fd opened before
// pivot_root. That fd is O_CLOEXEC and the holder is made non-dumpable, so
// sandbox processes cannot reach it through /proc/1/fd (CVE-2024-21626).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>

#include "runtime/sandbox_log.h"  // kLogRotateBytes
#include "runtime/state.h"        // touch_activity

namespace sbx::runtime {

/// The signal sbx queues (sigqueue(2)) to a holder to make it dumpable
/// (value 1) or not (value 0) around a CRIU dump
/// (runtime/native/criu_checkpoint.h). The holder obeys it only from outside
/// the sandbox's pid namespace (the sender's pid reads 0 there), so no process
/// of the sandbox can open /proc/1 with it; sbx sends it only while every
/// other process of the sandbox is frozen. Not forwarded to the first process.
inline int holder_dumpable_signal() noexcept { return SIGRTMIN + 4; }

struct HolderConfig {
  int state_dirfd = -1;        ///< the sandbox's state dir (O_DIRECTORY|O_CLOEXEC)
  pid_t workload = -1;         ///< the first process (its pid inside), or -1: hold only
  int log_fd = -1;             ///< read end of the first process's stdout pipe, or -1
  int err_fd = -1;             ///< read end of its stderr pipe, or -1 (then stderr goes to log_fd)
  int64_t timeout_ms = 0;      ///< 0: none; counted from the holder's start
  int64_t idle_timeout_ms = 0; ///< 0: none
};

/// The holder's loop; never returns. Must run as pid 1 of the sandbox's pid
/// namespace, after pivot_root. Blocks all catchable signals itself. Exits
/// with the first process's status (code, or 128+N), 124 on a timeout/idle
/// timeout, 128+N when signal N ended a holder without a first process.
/// Uses only system calls (safe after fork of a multi-threaded parent).
[[noreturn]] void run_holder(const HolderConfig& cfg);

}  // namespace sbx::runtime
