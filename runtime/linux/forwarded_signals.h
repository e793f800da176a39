// The signals sbx passes on to a sandbox's workload rather than acting on
// them itself (INT, TERM, HUP, QUIT, USR1/2, WINCH, CONT, ALRM, PIPE): the
// native init forwards them (runtime/native/init.h), and every backend's
// sbx blocks them while it waits and relays them (runtime/native/native_backend.h
// wait, runtime/gvisor/runsc_process.h).
#pragma once
#include <signal.h>

namespace sbx::runtime {

/// Signals forwarded to the workload (blocked in sbx while it waits).
const sigset_t& forwarded_signals();

}  // namespace sbx::runtime
