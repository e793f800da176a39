// A pooled sandbox's one command on its setup channel (runtime/native/native_backend.h
// StartOptions::pooled, run_pooled): sbx sends 'C' with four fds (SCM_RIGHTS):
// the command's stdin, stdout and stderr, and a memfd holding the command as
// u32-length-prefixed strings (argc, args…, envc, env…, filec, (path,
// content)…, u32 in host byte order), so that a command of any size fits one
// message. The waiting init sends 'R' (ready) first.
#pragma once
#include <string>

#include "runtime/native/native_backend.h"

namespace sbx::runtime {

/// The memfd's contents for `cmd` (its args, env and files; not its stdio).
std::string encode_command(const PooledCommand& cmd);

/// The inverse of encode_command. Throws sbx::Error ("pooled command:
/// truncated") on a short or malformed text.
PooledCommand decode_command(const std::string& in);

/// sbx's side: sends `cmd` with its three stdio fds over the setup channel
/// `sock`. Throws sbx::Error naming the sandbox `sandbox_id` when the memfd
/// cannot be made or sendmsg fails (the init is gone).
void send_command(int sock, const PooledCommand& cmd, const std::string& sandbox_id);

/// The pooled init's side: sends 'R', waits for the command, puts its stdio
/// fds (close-on-exec) in `stdio` and returns it. Exits quietly (125) on EOF
/// or another message: the pool's owner is gone or destroys the sandbox.
/// Throws sbx::Error when the message has not its four fds or the memfd
/// cannot be read.
PooledCommand receive_command(int sock, int stdio[3]);

}  // namespace sbx::runtime
