#include "runtime/gvisor/gvisor_copy.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <filesystem>
#include <memory>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/gvisor/gvisor_lifecycle.h"

namespace sbx::runtime {

namespace {

namespace stdfs = std::filesystem;
using ArchivePtr = std::unique_ptr<struct archive, int (*)(struct archive*)>;

// A temp file in the sandbox's state dir, removed on scope exit.
struct TempFile {
  std::string path;
  int fd = -1;
  TempFile(const std::string& dir, const char* what) {
    path = dir + "/.cp-" + std::to_string(::getpid()) + "-" + what;
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw_errno("create " + path);
  }
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
  }
  std::string text(size_t max = 2000) const {
    try {
      std::string s = fs::read_file(path);
      return s.size() > max ? s.substr(s.size() - max) : s;
    } catch (const Error&) {
      return "";
    }
  }
};

std::string base_name(const std::string& p) {
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

// Runs `script` (sh -c) in the sandbox as its root with the given stdio.
int run_script(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const std::string& script,
               const std::vector<std::string>& args, int in_fd, int out_fd, int err_fd, int cancel_fd = -1) {
  ExecRequest req;
  req.args = {"sh", "-c", script, "sbx-cp"};
  req.args.insert(req.args.end(), args.begin(), args.end());
  req.user = "0:0";
  req.cwd = "/";
  req.interactive = in_fd >= 0;
  req.cancel_fd = cancel_fd;
  try {
    return exec_in_gvisor_io(dir, st, spec, req, in_fd, out_fd, err_fd);
  } catch (const Error& e) {
    if (e.exit_code() == kExitNotFound)
      throw Error("sbx cp: the image of sandbox " + st.id.substr(0, 12) +
                      " has no 'sh'; gVisor sandboxes copy files through the image's sh and tar",
                  0, kExitSbxFailed);
    throw;
  }
}

[[noreturn]] void script_failed(const SandboxState& st, int code, const std::string& what, const TempFile& err) {
  std::string msg = err.text();
  while (!msg.empty() && msg.back() == '\n') msg.pop_back();
  if (code == kExitNotFound || msg.find("tar: not found") != std::string::npos ||
      msg.find("tar: command not found") != std::string::npos)
    throw Error("sbx cp: the image of sandbox " + st.id.substr(0, 12) +
                " has no 'tar'; gVisor sandboxes copy files through the image's tar");
  // The image's sh/tar say a path is missing only in words.
  bool missing = msg.find("No such file") != std::string::npos || msg.find("can't cd") != std::string::npos;
  throw Error(missing ? ErrorKind::FileNotFound : ErrorKind::Internal,
              "sbx cp: " + what + " in sandbox " + st.id.substr(0, 12) + " failed (exit " + std::to_string(code) + ")" +
                  (msg.empty() ? "" : ": " + msg));
}

// Adds HOST_PATH (not followed) and everything below it to `a` as NAME/...,
// owned by root. Returns files and bytes.
CopyResult add_tree(struct archive* a, const std::string& host_path, const std::string& name) {
  CopyResult r;
  auto add = [&](const std::string& path, const std::string& in_archive) {
    struct stat sb;
    if (::lstat(path.c_str(), &sb) < 0) throw_errno("sbx cp: stat " + path);
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode) && !S_ISLNK(sb.st_mode)) return;  // as native cp
    std::unique_ptr<struct archive_entry, void (*)(struct archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_copy_stat(e.get(), &sb);
    archive_entry_set_pathname(e.get(), in_archive.c_str());
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    archive_entry_set_nlink(e.get(), 1);
    if (S_ISLNK(sb.st_mode)) {
      std::error_code ec;
      std::string target = stdfs::read_symlink(path, ec).string();
      if (ec) throw Error("sbx cp: read the symlink " + path + ": " + ec.message());
      archive_entry_set_symlink(e.get(), target.c_str());
      archive_entry_set_size(e.get(), 0);
    } else if (!S_ISREG(sb.st_mode)) {
      archive_entry_set_size(e.get(), 0);
    }
    if (archive_write_header(a, e.get()) != ARCHIVE_OK)
      throw Error("sbx cp: write the tar header of " + path + ": " + archive_error_string(a));
    if (S_ISREG(sb.st_mode)) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0) throw_errno("sbx cp: open " + path);
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
        if (archive_write_data(a, buf, static_cast<size_t>(n)) < 0) {
          ::close(fd);
          throw Error("sbx cp: write " + path + " to the tar: " + archive_error_string(a));
        }
        r.bytes += static_cast<uint64_t>(n);
      }
      ::close(fd);
      ++r.files;
    }
  };
  add(host_path, name);
  struct stat sb;
  if (::lstat(host_path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    std::error_code ec;
    // Never follows a symlink (recursive_directory_iterator's default).
    for (auto it = stdfs::recursive_directory_iterator(host_path, ec); !ec && it != stdfs::recursive_directory_iterator();
         it.increment(ec)) {
      std::string rel = stdfs::path(it->path()).lexically_relative(host_path).string();
      add(it->path().string(), name + "/" + rel);
    }
    if (ec) throw Error("sbx cp: read the directory " + host_path + ": " + ec.message());
  }
  return r;
}

// libarchive's message, never NULL (it is when the read callback failed).
const char* aerr(struct archive* a) {
  const char* m = archive_error_string(a);
  return m ? m : "stopped";
}

// The sandbox's tar, read from a pipe as it comes (nothing staged on the
// host): at most `limit` bytes in all (0: no limit), and no more than
// `stall_ms` without a byte. On a breach `error` says which and the read
// fails, so libarchive stops.
struct TarStream {
  int fd = -1;
  uint64_t limit = 0;
  int stall_ms = 30000;
  uint64_t total = 0;
  std::string error;
  int error_code = kExitSbxFailed;
  int error_errno = 0;  // EFBIG: past `limit`
  char buf[65536];

  /// Up to sizeof buf bytes into buf: >0, 0 at EOF, -1 on a breach or error.
  ssize_t next() {
    for (;;) {
      struct pollfd pfd {fd, POLLIN, 0};
      int r = ::poll(&pfd, 1, stall_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        error = "the sandbox's tar sent nothing for " + std::to_string(stall_ms / 1000) +
                " s; stopped it (a stalled or hostile sandbox; SBX_CP_STALL_TIMEOUT=SECONDS sets the limit)";
        error_code = kExitTimeout;
        return -1;
      }
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) {
        error = std::string("read the tar from the sandbox: ") + std::strerror(errno);
        return -1;
      }
      total += static_cast<uint64_t>(n);
      if (limit && total > limit) {
        error = "the sandbox sent more than " + std::to_string(limit) +
                " bytes of tar; stopped (the copy's bound; SBX_CP_MAX_BYTES=BYTES sets it for sbx cp)";
        error_errno = EFBIG;
        return -1;
      }
      return n;
    }
  }
};

la_ssize_t tar_stream_read(struct archive*, void* p, const void** out) {
  auto* s = static_cast<TarStream*>(p);
  ssize_t n = s->next();
  *out = s->buf;
  return n < 0 ? ARCHIVE_FATAL : n;
}

// A `sh -c` script (the image's tar) run in the sandbox on a thread of its
// own, its stdout a pipe that `src` reads here as it comes. stop() has runsc
// exec SIGKILL it (the cancel pipe); finish() closes the read end (a tar
// still writing gets EPIPE) and joins. runsc exec's SIGCHLD is blocked on
// this thread meanwhile: it must reach the runner's signalfd.
struct TarFromSandbox {
  int data[2] = {-1, -1};
  int cancel[2] = {-1, -1};
  int code = 0;                  // the script's exit status, after finish()
  std::exception_ptr exec_error;  // what runsc exec threw, after finish()
  sigset_t old_mask;
  std::thread runner;

  TarFromSandbox(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const std::string& script,
                 const std::vector<std::string>& args, int err_fd, TarStream& src) {
    if (::pipe2(data, O_CLOEXEC) < 0) throw_errno("sbx cp: pipe");
    if (::pipe2(cancel, O_CLOEXEC) < 0) {
      int e = errno;
      ::close(data[0]);
      ::close(data[1]);
      throw_errno("sbx cp: pipe", e);
    }
    src.fd = data[0];
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::pthread_sigmask(SIG_BLOCK, &chld, &old_mask);
    runner = std::thread([this, &dir, &st, &spec, script, args, err_fd] {
      try {
        code = run_script(dir, st, spec, script, args, -1, data[1], err_fd, cancel[0]);
      } catch (...) {
        exec_error = std::current_exception();
      }
      ::close(data[1]);  // EOF for the reader, once runsc exec's own copy is gone too
    });
  }
  void stop() { (void)!::write(cancel[1], "x", 1); }
  void finish() {
    if (!runner.joinable()) return;
    ::close(data[0]);
    runner.join();
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    ::close(cancel[0]);
    ::close(cancel[1]);
  }
  ~TarFromSandbox() {
    if (runner.joinable()) {
      stop();
      finish();
    }
  }
  TarFromSandbox(const TarFromSandbox&) = delete;
  TarFromSandbox& operator=(const TarFromSandbox&) = delete;
};

// Extracts the tar from `src` (entries PREFIX or PREFIX/...) as NEW_NAME
// below the directory `parent` (an fd), safely (see the header); set-id bits
// are cleared (host_mode_from_sandbox) and no extended attribute is written.
CopyResult extract_as(TarStream& src, const std::string& prefix, int parent_fd, const std::string& new_name) {
  CopyResult r;
  ArchivePtr in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  if (archive_read_open(in.get(), &src, nullptr, tar_stream_read, nullptr) != ARCHIVE_OK)
    throw Error("sbx cp: " + (src.error.empty() ? std::string("read the tar from the sandbox: ") + aerr(in.get()) : src.error),
                src.error_errno, src.error_code);
  ArchivePtr out(archive_write_disk_new(), archive_write_free);
  // ARCHIVE_EXTRACT_SPARSE: runs of zeros become holes (a tar without
  // sparse entries, busybox's, sends a sparse file's holes as zeros).
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SPARSE |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
  // Relative paths below `parent`: the destination's own path is the user's.
  int saved = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (::fchdir(parent_fd) < 0) {
    int e = errno;
    if (saved >= 0) ::close(saved);
    throw_errno("sbx cp: enter the destination directory", e);
  }
  auto rename_entry = [&](const char* p, std::string& outp) {
    std::string s = p ? p : "";
    while (s.rfind("./", 0) == 0) s.erase(0, 2);
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    if (s == prefix) {
      outp = new_name;
      return true;
    }
    if (s.compare(0, prefix.size() + 1, prefix + "/") != 0) return false;
    outp = new_name + s.substr(prefix.size());
    return true;
  };
  std::string err;
  struct archive_entry* e;
  int rc;
  while ((rc = archive_read_next_header(in.get(), &e)) == ARCHIVE_OK) {
    std::string path, link;
    if (!rename_entry(archive_entry_pathname(e), path)) {
      err = std::string("the sandbox sent an entry outside the copy: ") + archive_entry_pathname(e);
      break;
    }
    auto type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) continue;  // devices, fifos: skipped
    if (const char* hl = archive_entry_hardlink(e)) {
      if (!rename_entry(hl, link)) continue;  // a hard link to outside the copy: skipped
      archive_entry_copy_hardlink(e, link.c_str());
    }
    archive_entry_copy_pathname(e, path.c_str());
    archive_entry_set_perm(e, host_mode_from_sandbox(archive_entry_perm(e)));
    archive_entry_xattr_clear(e);
    if (archive_write_header(out.get(), e) != ARCHIVE_OK) {
      err = std::string("write ") + path + ": " + aerr(out.get());
      break;
    }
    if (type == AE_IFREG && archive_entry_size(e) > 0) {
      const void* buf;
      size_t size;
      la_int64_t off;
      while ((rc = archive_read_data_block(in.get(), &buf, &size, &off)) == ARCHIVE_OK) {
        if (archive_write_data_block(out.get(), buf, size, off) < 0) {
          err = std::string("write ") + path + ": " + aerr(out.get());
          break;
        }
        r.bytes += size;
      }
      if (err.empty() && rc != ARCHIVE_EOF) err = std::string("read ") + path + " from the tar: " + aerr(in.get());
      if (!err.empty()) break;
    }
    if (type == AE_IFREG) ++r.files;
    archive_write_finish_entry(out.get());
  }
  if (err.empty() && rc != ARCHIVE_EOF) err = std::string("read the tar: ") + aerr(in.get());
  archive_write_close(out.get());
  if (saved >= 0) {
    (void)!::fchdir(saved);
    ::close(saved);
  }
  if (!src.error.empty()) throw Error("sbx cp: " + src.error, src.error_errno, src.error_code);
  if (!err.empty()) throw Error("sbx cp: " + err);
  // What follows the archive's end (tar pads to whole records) is read and
  // dropped, up to 1 MiB: a tar that keeps sending is stopped there.
  for (uint64_t after = 0;;) {
    ssize_t n = src.next();
    if (n == 0) break;
    if (n < 0) throw Error("sbx cp: " + src.error, src.error_errno, src.error_code);
    after += static_cast<uint64_t>(n);
    if (after > (1u << 20)) throw Error("sbx cp: the sandbox's tar kept sending after the end of the archive; stopped");
  }
  return r;
}

uint64_t env_number(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (*end) throw Error(ErrorKind::InvalidArgument,
              std::string("invalid ") + name + "='" + v + "': expected a whole number");
  return n;
}

}  // namespace

CopyResult copy_from_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                            const std::string& sandbox_path, const std::string& host_path, uint64_t max_bytes) {
  const std::string name = base_name(sandbox_path);
  if (name.empty() || name == "/" || name == "." || name == "..")
    throw Error("sbx cp: give a file or directory below / to copy out of a gVisor sandbox (not '" + sandbox_path + "')");
  // Where it goes: into an existing directory under its own name, else as HOST_PATH.
  struct stat sb;
  std::string parent, new_name;
  if (::stat(host_path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    parent = host_path;
    new_name = name;
  } else {
    parent = stdfs::path(host_path).parent_path().string();
    if (parent.empty()) parent = ".";
    new_name = base_name(host_path);
  }
  int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) throw_errno("sbx cp: open the destination directory " + parent);
  // Streamed: the sandbox's tar writes into a pipe that the extraction reads
  // (TarStream bounds it); runsc exec runs on a thread of its own, and a
  // breach writes to `cancel`, which makes it SIGKILL the tar in the sandbox.
  TempFile err(dir, "out.err");
  TarStream src;
  src.limit = max_bytes ? max_bytes : env_number("SBX_CP_MAX_BYTES", 0);
  src.stall_ms = static_cast<int>(std::min<uint64_t>(env_number("SBX_CP_STALL_TIMEOUT", 30), 86400) * 1000);
  if (src.stall_ms == 0) src.stall_ms = 30000;
  struct stat before;
  const bool existed = ::fstatat(parent_fd, new_name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0;
  std::optional<TarFromSandbox> tar;
  try {
    // GNU tar's --sparse sends holes as a sparse map, not as zeros.
    tar.emplace(dir, st, spec,
                "cd \"$(dirname \"$1\")\" || exit 2; s=; tar --version 2>/dev/null | grep -q 'GNU tar' && s=--sparse\n"
                "exec tar $s -cf - \"./$(basename \"$1\")\"",
                std::vector<std::string>{sandbox_path}, err.fd, src);
  } catch (...) {
    ::close(parent_fd);
    throw;
  }
  CopyResult r;
  std::exception_ptr extract_error;
  try {
    r = extract_as(src, name, parent_fd, new_name);
  } catch (...) {
    extract_error = std::current_exception();
    tar->stop();
  }
  tar->finish();
  const int code = tar->code;
  std::exception_ptr exec_error = tar->exec_error;
  auto undo = [&] {
    // A failed copy leaves nothing new behind (an entry that was there before stays).
    if (existed) return;
    std::error_code ec;
    stdfs::remove_all(stdfs::path("/proc/self/fd/" + std::to_string(parent_fd)) / new_name, ec);
  };
  if (extract_error) {
    undo();
    ::close(parent_fd);
    std::rethrow_exception(extract_error);
  }
  if (exec_error) {
    undo();
    ::close(parent_fd);
    std::rethrow_exception(exec_error);
  }
  if (code != 0) {
    undo();
    ::close(parent_fd);
    script_failed(st, code, "reading " + sandbox_path, err);
  }
  ::close(parent_fd);
  return r;
}

PathStat stat_in_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                        const std::string& sandbox_path) {
  if (sandbox_path.empty() || sandbox_path[0] != '/')
    throw Error(ErrorKind::InvalidArgument, "stat in sandbox " + st.id.substr(0, 12) + ": '" + sandbox_path +
                                                "' is not an absolute path");
  // The sandbox's tar writes into a pipe; its first header is the path's
  // own entry (tar writes a header before any content, and never follows
  // the path itself when it is a symlink). Then stop() has runsc exec
  // SIGKILL that tar, so a huge file or tree is never read to its end.
  TempFile err(dir, "stat.err");
  TarStream src;
  TarFromSandbox tar(dir, st, spec, "cd \"$(dirname \"$1\")\" || exit 2; exec tar -cf - \"./$(basename \"$1\")\"",
                     {sandbox_path}, err.fd, src);
  PathStat out;
  bool got = false;
  std::string read_error;
  {
    ArchivePtr in(archive_read_new(), archive_read_free);
    archive_read_support_format_tar(in.get());
    struct archive_entry* e = nullptr;
    if (archive_read_open(in.get(), &src, nullptr, tar_stream_read, nullptr) == ARCHIVE_OK) {
      int rc = archive_read_next_header(in.get(), &e);
      if (rc == ARCHIVE_OK || rc == ARCHIVE_WARN) {
        out.mode = archive_entry_mode(e);
        out.size = archive_entry_size_is_set(e) ? static_cast<uint64_t>(archive_entry_size(e)) : 0;
        out.mtime_s = archive_entry_mtime(e);
        if (const char* t = archive_entry_symlink(e)) out.link_target = t;
        got = true;
      } else if (rc != ARCHIVE_EOF) {
        read_error = src.error.empty() ? aerr(in.get()) : src.error;
      }
    } else {
      read_error = src.error.empty() ? aerr(in.get()) : src.error;
    }
  }
  tar.stop();
  tar.finish();
  if (got) return out;  // (a directory's size is 0: a tar header gives none)
  if (tar.exec_error) std::rethrow_exception(tar.exec_error);
  if (tar.code != 0) script_failed(st, tar.code, "stat of " + sandbox_path, err);
  throw Error(ErrorKind::FileNotFound, "stat of " + sandbox_path + " in sandbox " + st.id.substr(0, 12) +
                                           ": the sandbox's tar sent no entry" +
                                           (read_error.empty() ? "" : " (" + read_error + ")"));
}

CopyResult copy_into_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                            const std::string& host_path, const std::string& sandbox_path) {
  struct stat sb;
  if (::lstat(host_path.c_str(), &sb) < 0) throw_errno("sbx cp: " + host_path);
  const std::string name = base_name(host_path);
  if (name.empty() || name == "/" || name == "." || name == "..")
    throw Error("sbx cp: give a file or directory to copy, not '" + host_path + "'");
  TempFile err(dir, "in.err");
  // Streamed: a thread writes the tar into a pipe that the sandbox's tar
  // reads as its stdin, so nothing is staged on the host (a sparse file of
  // 1 TiB would be 1 TiB of tar: the image's tar may not read sparse
  // entries). The writer blocks SIGPIPE: when the sandbox's tar stops
  // reading, its write fails with EPIPE (the thread's pending SIGPIPE goes
  // with the thread). SIGCHLD stays blocked there too: it is for the
  // signalfd of runsc exec's runner in the calling thread.
  int sv[2];
  if (::pipe2(sv, O_CLOEXEC) < 0) throw_errno("sbx cp: pipe");
  CopyResult r;
  std::exception_ptr tar_error;
  std::thread writer([&] {
    sigset_t pipe_sig;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    sigaddset(&pipe_sig, SIGCHLD);
    ::pthread_sigmask(SIG_BLOCK, &pipe_sig, nullptr);
    try {
      ArchivePtr a(archive_write_new(), archive_write_free);
      archive_write_set_format_pax_restricted(a.get());
      if (archive_write_open_fd(a.get(), sv[1]) != ARCHIVE_OK)
        throw Error(std::string("sbx cp: write the tar: ") + aerr(a.get()));
      r = add_tree(a.get(), host_path, name);
      if (archive_write_close(a.get()) != ARCHIVE_OK)
        throw Error(std::string("sbx cp: write the tar: ") + aerr(a.get()));
    } catch (...) {
      tar_error = std::current_exception();
    }
    ::close(sv[1]);  // EOF for the sandbox's tar
  });
  // Into an existing directory under its own name; else as the destination,
  // through a temp dir and rename, so that a symlink there is replaced.
  const char* script =
      "d=\"$1\"; n=\"$2\"\n"
      "if [ -d \"$d\" ]; then cd \"$d\" && exec tar -xf -; fi\n"
      "cd \"$(dirname \"$d\")\" || exit 3\n"
      "b=\"$(basename \"$d\")\"; t=\".sbx-cp.$$\"\n"
      "mkdir \"$t\" || exit 3\n"
      "if (cd \"$t\" && tar -xf -); then rm -f \"$b\" 2>/dev/null; mv \"$t/$n\" \"$b\"; s=$?; else s=1; fi\n"
      "rm -rf \"$t\"; exit $s\n";
  int code = -1;
  std::exception_ptr exec_error;
  try {
    code = run_script(dir, st, spec, script, {sandbox_path, name}, sv[0], -1, err.fd);
  } catch (...) {
    exec_error = std::current_exception();
  }
  ::close(sv[0]);  // a writer still sending gets EPIPE
  writer.join();
  if (exec_error) std::rethrow_exception(exec_error);
  if (code != 0) script_failed(st, code, "writing " + sandbox_path, err);
  if (tar_error) std::rethrow_exception(tar_error);
  return r;
}

}  // namespace sbx::runtime
