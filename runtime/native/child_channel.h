// The channel from a sandbox's child processes to sbx, and their last step
// (exec), shared by the first process (runtime/native/native_backend.cpp) and
// `sbx exec` (runtime/native/exec.cpp).
//
// A SOCK_SEQPACKET socketpair, close-on-exec on both sides. The child sends
//   'E' <exit code byte> <message>   a setup or exec failure
//   'P' + SCM_RIGHTS fd              the pty master (with a terminal)
// and EOF (every child-side end closed, the last one by execve) means the
// command is running. Other one-byte messages (sync steps) are the callers'.
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// Child side: reports a failure (exit code 125/126/127, message for a
/// person). Async-signal-safe enough for a forked child: no allocation
/// besides the message; never throws; a send failure (sbx gone) is ignored.
void send_error(int sock, int code, const std::string& msg) noexcept;

/// Sends the one-byte message `tag` with `fds` attached (SCM_RIGHTS; at
/// most 16). Throws sbx::Error (with sendmsg's errno) when sendmsg fails.
void send_fds(int sock, char tag, const std::vector<int>& fds);

/// Child side: sends the pty master `fd` to sbx ('P' + SCM_RIGHTS). Throws
/// sbx::Error when sendmsg fails.
void send_fd(int sock, int fd);

/// What the child reported before EOF.
struct ChildReport {
  std::string error;     ///< the 'E' message; empty when the command runs
  int exit_code = 0;     ///< the 'E' code (0 when none came)
  int pty_master = -1;   ///< the 'P' fd (close-on-exec), or -1
  int read_errno = 0;    ///< recvmsg's errno when reading failed (not EINTR)
  bool stopped = false;  ///< the `stop_at` message came (the channel stays open)
};

/// Parent side: reads the channel until EOF (or a read error, kept in
/// read_errno; the caller decides whether that is fatal). Ignores other
/// messages, except a one-byte `stop_at` message (when not 0): then it
/// returns at once with `stopped` set (a pooled init's "ready", 'R').
ChildReport read_child_report(int sock, char stop_at = 0);

/// PATH search as execvp(3), with the sandbox's PATH from `env` ("PATH=…";
/// the OCI/podman default when absent): a `cmd` with a '/' is returned as it
/// is. Returns "" with errno ENOENT (not found) or EACCES (found, not
/// executable).
std::string find_executable(const std::string& cmd, const std::vector<std::string>& env);

/// args[0] as the command will be exec'd (find_executable with `env`'s
/// PATH), or throws sbx::Error with exit code 127 (not found) or 126 (found
/// but not executable) and the message podman and runc give ("exec: \"x\":
/// executable file not found in $PATH").
std::string resolve_command(const std::string& cmd, const std::vector<std::string>& env);

/// The very last step of every sandbox or container process: signal
/// dispositions back to the default and an empty signal mask (what the
/// caller ignored or blocked must not reach the command: a shell started
/// with SIGTERM ignored cannot trap it, POSIX 2.11; runc's Go init resets
/// them the same way), then execve(2) of `exe`. Never returns: throws
/// sbx::Error with exit code 127 (ENOENT, ENOTDIR) or 126.
[[noreturn]] void exec_file(const std::string& exe, const std::vector<std::string>& args,
                            const std::vector<std::string>& env);

/// The workload's last step: resolve_command, then no_new_privs and the
/// default seccomp profile last when `no_new_privileges` (nothing but
/// execve runs after it), then exec_file. Never returns: throws sbx::Error
/// with exit code 127, 126 or 125 (prctl failed).
[[noreturn]] void exec_command(const std::vector<std::string>& args, const std::vector<std::string>& env,
                               bool no_new_privileges);

}  // namespace sbx::runtime
