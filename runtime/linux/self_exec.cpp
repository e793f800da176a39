#include "runtime/linux/self_exec.h"

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <charconv>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

// The static helper program (tools/sbx-helper.cpp), when this binary embeds
// it (CMakeLists.txt: sbx does; its sanitizer builds, sbx-runc and the test
// programs do not). Weak: where nothing defines them they are null.
extern "C" {
__attribute__((weak, visibility("hidden"))) extern const char sbx_helper_image[];
__attribute__((weak, visibility("hidden"))) extern const char sbx_helper_image_end[];
}

namespace sbx::runtime {

namespace {

std::atomic<int> g_image{-1};
std::once_flag g_once;

/// How much of the ELF file `fd` (of `size` bytes) the kernel and the
/// dynamic loader read: up to the end of its last PT_LOAD segment. What
/// follows is debug information and the section headers, which running it
/// never needs (191 MB of a 198 MB RelWithDebInfo sbx). `size` itself when
/// the file is not a 64-bit ELF this code knows, or its program headers lie
/// beyond that end.
off_t loaded_extent(int fd, off_t size) {
  Elf64_Ehdr eh;
  if (::pread(fd, &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      eh.e_phnum > 256)
    return size;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  const size_t bytes = ph.size() * sizeof(Elf64_Phdr);
  if (::pread(fd, ph.data(), bytes, static_cast<off_t>(eh.e_phoff)) != static_cast<ssize_t>(bytes)) return size;
  uint64_t end = eh.e_phoff + bytes;
  for (const auto& p : ph)
    if (p.p_type == PT_LOAD || p.p_type == PT_INTERP || p.p_type == PT_DYNAMIC || p.p_type == PT_NOTE)
      end = std::max<uint64_t>(end, p.p_offset + p.p_filesz);
  return end >= static_cast<uint64_t>(size) ? size : static_cast<off_t>(end);
}

/// A new memfd named `name` that can be sealed and executed. Throws sbx::Error.
Fd executable_memfd(const char* name) {
  // MFD_EXEC: executable even where vm.memfd_noexec makes memfds noexec by
  // default (Linux 6.3+; older kernels refuse the flag: then without it).
  Fd mfd(static_cast<int>(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC)));
  if (mfd.fd < 0 && errno == EINVAL) mfd = Fd(static_cast<int>(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (mfd.fd < 0) throw_errno(std::string("memfd_create for the program of sbx's helpers (") + name + ")");
  return mfd;
}

/// Makes the memfd `mfd` (filled) read-and-execute only and sealed, and
/// returns a read-only open of it (close-on-exec). Throws sbx::Error.
int seal_image(Fd mfd) {
  // Read and execute only (a memfd starts as 0777): a sandbox that gets hold
  // of it through /proc/PID/exe cannot even open it for writing, which,
  // sealed or not, would make every later exec of it fail with ETXTBSY.
  // (Host root in a --userns host sandbox passes mode bits with
  // CAP_DAC_OVERRIDE: it could do that, though not change a byte.)
  if (::fchmod(mfd.fd, 0555) < 0) throw_errno("chmod the memfd of sbx's helper program");
  // Nothing may change it any more: not its bytes, its size, its seals, its
  // exec bits (F_SEAL_EXEC: Linux 6.3+, else without).
  const int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
  if (::fcntl(mfd.fd, F_ADD_SEALS, seals | F_SEAL_EXEC) < 0 && ::fcntl(mfd.fd, F_ADD_SEALS, seals) < 0)
    throw_errno("seal the memfd of sbx's helper program");
  if ((::fcntl(mfd.fd, F_GET_SEALS) & seals) != seals) throw Error("the memfd of sbx's helper program is not sealed");
  // execve refuses a file that is open for writing (ETXTBSY): keep a
  // read-only open of it and let the writable one go.
  std::string self = "/proc/self/fd/" + std::to_string(mfd.fd);
  int ro = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (ro < 0) throw_errno("reopen the memfd of sbx's helper program read-only");
  return ro;
}

/// A sealed, read-only memfd ("sbx-helper") holding the embedded static
/// helper program. Throws sbx::Error.
int seal_embedded_helper() {
  Fd mfd = executable_memfd("sbx-helper");
  const char* p = sbx_helper_image;
  const size_t size = static_cast<size_t>(sbx_helper_image_end - sbx_helper_image);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(mfd.fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("write sbx's helper program into a memfd", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return seal_image(std::move(mfd));
}

/// A sealed, read-only memfd ("sbx") copy of the part of /proc/self/exe
/// that runs (loaded_extent). Throws sbx::Error.
int seal_copy_of_self() {
  Fd src(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (src.fd < 0) throw_errno("open /proc/self/exe to copy sbx's binary for its helpers");
  struct stat st {};
  if (::fstat(src.fd, &st) < 0) throw_errno("stat sbx's binary (/proc/self/exe)");
  const off_t extent = loaded_extent(src.fd, st.st_size);
  Fd mfd = executable_memfd("sbx");
  off_t left = extent;
  while (left > 0) {
    ssize_t n = ::sendfile(mfd.fd, src.fd, nullptr, static_cast<size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("copy sbx's binary into a memfd", n < 0 ? errno : EIO);
    left -= n;
  }
  if (extent < st.st_size) {
    // The section headers were left out: say there are none (e_shoff,
    // e_shnum, e_shstrndx), so that a tool that reads the copy does not look
    // past its end.
    const Elf64_Off no_off = 0;
    const Elf64_Half none = 0;
    if (::pwrite(mfd.fd, &no_off, sizeof no_off, offsetof(Elf64_Ehdr, e_shoff)) != sizeof no_off ||
        ::pwrite(mfd.fd, &none, sizeof none, offsetof(Elf64_Ehdr, e_shnum)) != sizeof none ||
        ::pwrite(mfd.fd, &none, sizeof none, offsetof(Elf64_Ehdr, e_shstrndx)) != sizeof none)
      throw_errno("write the ELF header of the memfd copy of sbx's binary");
  }
  return seal_image(std::move(mfd));
}

}  // namespace

void use_fresh_helpers() {
  std::call_once(g_once, [] {
    const bool embedded = sbx_helper_image != nullptr && sbx_helper_image_end > sbx_helper_image;
    g_image.store(embedded ? seal_embedded_helper() : seal_copy_of_self());
  });
  if (g_image.load() < 0) throw Error("sbx's helpers have no image (an earlier copy of the binary failed)");
}

int fresh_helper_image() noexcept { return g_image.load(); }

namespace {

/// Closes every fd from 3 up but `keep` and the image, clears close-on-exec
/// on `keep`, and execs the image. Async-signal-safe and without a write to
/// memory but errno's: it also runs in spawn_fresh_helper's child, which
/// shares its parent's memory. Returns the errno of the failed step.
int exec_image(char* const argv[], const int* keep, size_t nkeep) noexcept {
  const int image = g_image.load();
  if (image < 0) return ENOEXEC;
  // Every fd of the parent's but `keep` goes (its other threads' sockets,
  // other sandboxes' channels); the image stays open until the exec.
  // (Ascending through `keep` and the image without allocating: each round
  // takes the smallest one above the last and closes the gap below it.)
  unsigned next = 3;
  int prev = 2;
  for (;;) {
    int k = -1;
    for (size_t i = 0; i < nkeep; ++i)
      if (keep[i] > prev && (k < 0 || keep[i] < k)) k = keep[i];
    if (image > prev && (k < 0 || image < k)) k = image;
    if (k < 0) break;
    if (static_cast<unsigned>(k) > next) ::syscall(SYS_close_range, next, static_cast<unsigned>(k) - 1, 0U);
    next = static_cast<unsigned>(k) + 1;
    prev = k;
  }
  ::syscall(SYS_close_range, next, ~0U, 0U);
  for (size_t i = 0; i < nkeep; ++i)
    if (keep[i] >= 0 && ::fcntl(keep[i], F_SETFD, 0) < 0) return errno;
  static char* const empty_env[] = {nullptr};
  ::syscall(SYS_execveat, image, "", argv, empty_env, AT_EMPTY_PATH);
  return errno;
}

struct SpawnArgs {
  char* const* argv;
  const int* keep;
  size_t nkeep;
  const sigset_t* mask;  ///< the caller's signal mask, for the helper
  int err;               ///< written by the child when its exec failed
};

/// The child of spawn_fresh_helper, on its own stack in its parent's memory
/// (CLONE_VM) until the exec: it writes nothing there but `err` (and errno).
int spawn_child(void* p) {
  auto* a = static_cast<SpawnArgs*>(p);
  // A handler of the parent's would run here in the parent's memory: none
  // runs (the parent blocked every signal; dispositions are this child's
  // own copy, CLONE_SIGHAND is not set). Ignored signals stay ignored, as
  // across fork and exec.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &sa) < 0) continue;
    if (sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL) {
      sa = {};
      sa.sa_handler = SIG_DFL;
      ::sigaction(sig, &sa, nullptr);
    }
  }
  ::sigprocmask(SIG_SETMASK, a->mask, nullptr);
  a->err = exec_image(a->argv, a->keep, a->nkeep);
  ::_exit(kExitSbxFailed);
}

}  // namespace

pid_t spawn_fresh_helper(char* const argv[], const int* keep, size_t nkeep, int* exec_errno) {
  *exec_errno = 0;
  if (g_image.load() < 0) {
    *exec_errno = ENOEXEC;
    return -1;
  }
  // The child runs on this buffer, a part of this thread's stack that this
  // thread does not touch while it waits (CLONE_VFORK). The child needs a
  // few hundred bytes (sigaction, fcntl, close_range, execveat); clone
  // takes the top (the stack grows down).
  alignas(64) char stack[32 * 1024];
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  SpawnArgs a{argv, keep, nkeep, &old, 0};
  int saved = 0;
  pid_t pid = ::clone(spawn_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  if (pid < 0) saved = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw_errno("start sbx's helper (clone)", saved);
  if (a.err != 0) {
    // It exited without the exec: reap it here, the caller has no child.
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    *exec_errno = a.err;
    return -1;
  }
  return pid;
}

void enter_fresh_helper() noexcept {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_NAME, "sbx", 0, 0, 0);  // (an exec through an fd names it by the fd's number)
  ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
}

int helper_payload(const std::string& text) {
  Fd m(static_cast<int>(::memfd_create("sbx-helper-request", MFD_CLOEXEC)));
  if (m.fd < 0) throw_errno("memfd_create for a helper's request");
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::pwrite(m.fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("write a helper's request", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return m.release();
}

std::string read_helper_payload(int fd) {
  Fd f(fd);
  struct stat st {};
  if (::fstat(f.fd, &st) < 0) throw_errno("stat the helper's request");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::pread(f.fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("read the helper's request", n < 0 ? errno : EIO);
    got += static_cast<size_t>(n);
  }
  return text;
}

int helper_fd_arg(const char* text, const char* what) {
  int fd = -1;
  const char* end = text ? text + std::strlen(text) : nullptr;
  auto [p, ec] = text ? std::from_chars(text, end, fd) : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (!text || ec != std::errc() || p != end || fd < 0)
    throw Error(std::string("sbx helper: the ") + what + " fd argument '" + (text ? text : "") +
                "' is not an fd number (helpers are started by sbx itself)");
  return fd;
}

}  // namespace sbx::runtime
