// A new pseudo-terminal inside a sandbox or container, and making it a
// process's controlling terminal: the steps every sbx front end's init and
// exec share (the native backend's init and exec, sbx-runc's container and
// exec processes). pty(7), devpts (Documentation/filesystems/devpts.rst).
#pragma once

namespace sbx::runtime {

/// Both sides of a new pty.
struct PtyPair {
  int master = -1;  ///< close-on-exec
  int slave = -1;   ///< opened from the master (TIOCGPTPEER), not close-on-exec
};

/// Opens a new pty from /dev/ptmx as the current mount namespace sees it
/// (the sandbox's own devpts), unlocked, and its slave through the master
/// (TIOCGPTPEER: no path lookup in /dev/pts). Throws sbx::Error naming the step.
PtyPair open_pty();

/// Makes `slave` the controlling terminal of the caller, which must lead a
/// session without one (after setsid()), and its fds 0, 1 and 2; closes
/// `slave` when it is above 2. Throws sbx::Error naming the step.
void make_controlling_terminal(int slave);

}  // namespace sbx::runtime
