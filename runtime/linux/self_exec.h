// Fresh helpers: the processes that enter a sandbox start from a new exec of
// sbx, never from a fork of an sbx that holds secrets.
//
// A fork shares nothing but it copies everything: the child of `sbx serve`
// that joins a sandbox to run `docker exec` (runtime/native/exec.cpp), or
// that becomes a new sandbox's init (runtime/native/native_backend.cpp),
// carries the server's whole memory — its TCP bearer token, every E2B access
// token — until it execs. Inside the sandbox, a process that stops each new
// pid and reads /proc/PID/mem before that exec reads the server. A fork of a
// multithreaded process cannot be scrubbed reliably (other threads' buffers,
// allocator caches, TLS), so the way out is an execve before the sandbox: a
// fresh image of sbx, with an empty environment and only the fds it is
// given, that receives its request from the parent and does the joining and
// the cloning itself (runc does the same with its nsexec/runc init).
//
// The image is a sealed memfd (memfd_create(2), F_SEAL_WRITE|SHRINK|GROW|SEAL;
// runc's fix for CVE-2019-5736) holding sbx's small static helper program
// (tools/sbx-helper.cpp, embedded in sbx; ~0.4 ms to start, a fresh sbx ~2 ms)
// or, in builds without it, a copy of the running binary's loadable part. A
// sandbox process that gets hold of a helper's /proc/PID/exe ("#!/proc/self/exe"
// makes the kernel exec the helper's image as the workload) can then not
// write sbx's program on the host, not even as host root in a --userns host
// sandbox, nor after sbx serve has exited. Made once per process (sbx serve:
// one for the server's life, ~4 MB). The helper is started with a vfork (spawn_fresh_helper: no copy
// of the caller's memory exists at any time) and made non-dumpable first
// thing after its exec, before it joins anything, so no process of the
// sandbox can read or ptrace it or its children until the workload's own
// execve.
//
// Who takes this path: a process that called use_fresh_helpers() (sbx serve,
// at its start, before it reads any secret). The command line has no secret
// in memory and starts sandboxes from a fork as before (the extra exec would
// cost every `sbx run` and `sbx exec` its time).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace sbx::runtime {

/// argv[1] that makes sbx run a helper: cli/main.cpp hands such a command
/// line to run_fresh_helper (runtime/native/fresh_helper.h) before anything
/// else. Not a command for people: a helper needs the fds its parent gives.
inline constexpr const char* kHelperArg = "__sbx-helper";

/// From now on, this process starts native sandboxes and native execs
/// through fresh helpers (see the top of this file). Seals the helper program
/// (embedded, else /proc/self/exe's loadable part) in a memfd once (later calls do nothing). Call it at process
/// start, before secrets are read and threads made. Throws sbx::Error (125)
/// when the copy cannot be made (no memfd_create, vm.memfd_noexec=2, ...).
void use_fresh_helpers();

/// The sealed image's fd (read-only, close-on-exec), or -1 when this process
/// does not use fresh helpers. No throw.
int fresh_helper_image() noexcept;

/// Starts a helper: a child that closes every fd from 3 up but the `nkeep`
/// fds of `keep` (any order; -1 entries are ignored, fds below 3 stay as they
/// are), clears close-on-exec on those, and execs the sealed image with
/// `argv`, an empty environment and the caller's signal mask. The child is a
/// vfork (clone(2) CLONE_VM|CLONE_VFORK, as posix_spawn): it copies none of
/// the caller's memory, not even its page tables, and this thread waits only
/// until the exec. (A fork of sbx serve copied the page tables of the whole
/// server and made its threads take copy-on-write faults afterwards.) Until
/// enter_fresh_helper the helper is dumpable, which exposes nothing: it is a
/// fresh image, outside every sandbox. Returns the helper's pid, or -1 with
/// `*exec_errno` set when the exec failed (the child is reaped). Throws
/// sbx::Error when clone fails.
pid_t spawn_fresh_helper(char* const argv[], const int* keep, size_t nkeep, int* exec_errno);

/// First thing in a helper, after its exec: non-dumpable again (execve made
/// it dumpable) and close-on-exec on every inherited fd from 3 up (so none
/// reaches the workload unless it is passed on explicitly). No throw.
void enter_fresh_helper() noexcept;

/// The request for a helper, in a memfd (close-on-exec, offset 0) to pass
/// to it: a pipe could fill up before the helper reads it. Throws sbx::Error.
int helper_payload(const std::string& text);

/// In a helper: the whole payload behind `fd` (which it closes). Throws
/// sbx::Error.
std::string read_helper_payload(int fd);

/// The fd number in a helper's argv[i] (decimal, >= 0). Throws sbx::Error
/// naming `what` when it is not one.
int helper_fd_arg(const char* text, const char* what);

}  // namespace sbx::runtime
