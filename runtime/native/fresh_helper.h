// The entry of sbx's fresh helpers (runtime/linux/self_exec.h): the command
// line {"sbx", kHelperArg, WHAT, FD...} that a process using fresh helpers
// execs to join a sandbox (WHAT "exec": runtime/native/exec.h) or to clone a
// new sandbox's init (WHAT "init": runtime/native/native_backend.h).
#pragma once

namespace sbx::runtime {

/// Whether argv asks for a helper (argv[1] is kHelperArg). No throw.
bool is_fresh_helper(int argc, char** argv) noexcept;

/// Runs the helper argv asks for; first thing, it makes itself non-dumpable
/// again and every inherited fd from 3 close-on-exec (enter_fresh_helper).
/// Returns its exit status when it ends without exiting itself: 125 with a
/// message on stderr for a command line no sbx made.
int run_fresh_helper(int argc, char** argv) noexcept;

}  // namespace sbx::runtime
