// Starting a sandbox's first process from a process that may have threads.
//
// The native backend starts a sandbox's init with a raw clone3(2) (glibc's
// fork() has no CLONE_NEW*, CLONE_PIDFD or CLONE_INTO_CGROUP), and the child
// goes on running sbx's own code (runtime/native/native_backend.cpp
// init_main: C++, malloc, std::string). A raw clone skips what glibc's fork()
// does for its child: take and reset malloc's arena locks and the other
// locks of glibc, and leave the child a thread list holding only itself. In
// a process with other threads (`sbx serve`'s request threads, the warm
// pool's refill threads) the child can thus inherit a lock that another
// thread held at that instant, which no thread of the child will ever
// release, and wait on it forever (seen: malloc's arena lock at 4 concurrent
// creates through the Docker API, glibc's set*id broadcast to threads that do
// not exist in the child).
//
// clone_from_single_thread makes the clone from a process with no other
// thread: the caller itself when it has none (the CLI: not one syscall more
// than before, beyond a look at /proc when it once had threads), else a helper forked with
// glibc's fork() (single-threaded, its glibc state consistent), whose clone3
// has CLONE_PARENT, so that the new process is the caller's own child all
// the same (its pidfd, wait status, rusage and parent-death signal are the
// caller's, as with a direct clone); the helper then exits. The cost is one
// fork and exit of the caller per start (measured in bench/serve.sh's rows).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sbx::runtime {

/// Whether the calling process has threads besides the calling one. glibc's
/// __libc_single_threaded answers "no" for free in a process that never made
/// a thread; else the Threads line of /proc/self/status decides (an
/// unreadable one reads as "yes": the safe side). No throw.
bool other_threads_exist() noexcept;

/// A fork-like clone: returns 0 in the new process, its pid in the parent
/// (and its pidfd in *pidfd), throws sbx::Error on failure. It must add
/// `extra_flags` (CLONE_PARENT, from the helper) to its clone3 flags, and
/// then use exit_signal 0 (the kernel takes the helper's own, SIGCHLD).
using CloneFn = std::function<pid_t(uint64_t extra_flags, int* pidfd)>;

/// Runs `clone` in a process with no other thread (see the top of this file)
/// and `child()` in the new process, which must not return (if it does, the
/// process exits with 125). The new process is the caller's child either
/// way. From a helper it inherits only fds 0-2 and `keep`: the helper
/// closes the rest first (other threads' sockets and pipes, whose peers wait
/// for their EOF: two concurrent creates each holding a copy of the other's
/// setup channel never finish). Returns its pid, and its pidfd (close-on-exec)
/// in *pidfd. Errors: sbx::Error from `clone` (its message and errno), or
/// when the helper cannot be forked or dies without an answer; nothing is
/// left behind then.
pid_t clone_from_single_thread(const CloneFn& clone, const std::function<void()>& child, int* pidfd,
                               std::vector<int> keep = {});

/// As clone_from_single_thread, for a caller that uses fresh helpers
/// (runtime/linux/self_exec.h: sbx serve): the clone is made by a fresh exec
/// of sbx, so that the new process holds none of the caller's memory. The
/// helper runs with argv {"sbx", kHelperArg, entry, REQUEST_FD, ANSWER_FD}
/// and an empty environment: it reads `payload` from REQUEST_FD, inherits
/// the fds `keep` at their numbers and nothing else of the caller's, and
/// ends with answer_clone(ANSWER_FD, ...). Returns the new process's pid and
/// its pidfd (close-on-exec) in *pidfd. Errors: as clone_from_single_thread,
/// and when the helper cannot be exec'd.
pid_t clone_from_fresh_helper(const char* entry, const std::string& payload, int* pidfd, std::vector<int> keep);

/// The helper's side (a forked one, or a fresh one): `clone` with
/// CLONE_PARENT, `child()` in the new process (which must not return: then
/// it exits with 125), and the new pid or the clone's error written to
/// `answer_fd` for the caller; then the helper exits. Never returns.
[[noreturn]] void answer_clone(int answer_fd, const CloneFn& clone, const std::function<void()>& child) noexcept;

}  // namespace sbx::runtime
