// The sandbox's pid 1: a minimal init (like tini / docker-init). It reaps
// every zombie re-parented to it, forwards the signals sbx sends it to the
// workload, and exits with the workload's status once the workload exits —
// after which the kernel kills whatever else is left in the pid namespace.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include "runtime/linux/forwarded_signals.h"  // the signals the init forwards

namespace sbx::runtime {

/// The init's loop. `workload` is the already forked workload; the signals of
/// forwarded_signals() plus SIGCHLD must be blocked. Exits the process with the
/// workload's exit code, or 128+N when a signal N killed it. Never returns.
[[noreturn]] void run_init(pid_t workload);

}  // namespace sbx::runtime
