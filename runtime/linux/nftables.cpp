#include "runtime/linux/nftables.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef SBX_HAVE_NFTABLES
#include <nftables/libnftables.h>

#include "common/shared_lib.h"
#endif

#include "common/error.h"

namespace sbx::runtime {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

#ifdef SBX_HAVE_NFTABLES
/// The libnftables functions sbx calls (libnftables(3)), loaded with dlopen
/// the first time a network needs them: linked, libnftables and its
/// dependencies (libnftnl, libmnl, libxtables, libjansson, libgmp) cost every
/// sbx start ~0.8 ms, also the starts that never touch a network.
struct Nft {
  SharedLib lib{{"libnftables.so.1"}, "libnftables1", "nftables rules (--network private)"};
  nft_ctx* (*ctx_new)(uint32_t) = lib.fn<decltype(ctx_new)>("nft_ctx_new");
  int (*ctx_buffer_output)(nft_ctx*) = lib.fn<decltype(ctx_buffer_output)>("nft_ctx_buffer_output");
  int (*ctx_buffer_error)(nft_ctx*) = lib.fn<decltype(ctx_buffer_error)>("nft_ctx_buffer_error");
  int (*run_cmd_from_buffer)(nft_ctx*, const char*) = lib.fn<decltype(run_cmd_from_buffer)>("nft_run_cmd_from_buffer");
  const char* (*ctx_get_output_buffer)(nft_ctx*) = lib.fn<decltype(ctx_get_output_buffer)>("nft_ctx_get_output_buffer");
  const char* (*ctx_get_error_buffer)(nft_ctx*) = lib.fn<decltype(ctx_get_error_buffer)>("nft_ctx_get_error_buffer");
  /// One context per process: creating one reads nft's config, ~100 µs.
  nft_ctx* ctx = nullptr;
  Nft() {
    ctx = ctx_new(NFT_CTX_DEFAULT);
    if (ctx) {
      ctx_buffer_output(ctx);
      ctx_buffer_error(ctx);
    }
  }
};

/// libnftables, loaded once per process (thread-safe C++11 static), or
/// nullptr when it is not installed: then sbx runs the nft command, which
/// needs only the nftables package.
const Nft* nft_lib() noexcept {
  static const Nft* lib = []() -> const Nft* {
    try {
      return new Nft();  // never freed: the process keeps the library
    } catch (const Error&) {
      return nullptr;
    }
  }();
  return lib;
}
#endif

/// `nft -f -` with `script` on stdin; returns {exit status, output + errors}.
std::pair<int, std::string> run_nft_command(const std::string& script) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) < 0) throw_errno("create a pipe for nft");
  if (::pipe2(out, O_CLOEXEC) < 0) {
    int e = errno;
    ::close(in[0]);
    ::close(in[1]);
    throw_errno("create a pipe for nft", e);
  }
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork nft");
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    const char* argv[] = {"nft", "-f", "-", nullptr};
    for (const char* p : {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"}) ::execv(p, const_cast<char**>(argv));
    ::execvp("nft", const_cast<char**>(argv));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  (void)!::write(in[1], script.data(), script.size());  // small: fits the pipe
  ::close(in[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, text};
}

}  // namespace

std::string nft_apply(const std::string& script, const std::string& what) {
#ifdef SBX_HAVE_NFTABLES
  if (const Nft* nft = nft_lib()) {
    nft_ctx* ctx = nft->ctx;
    if (!ctx) throw Error(what + ": cannot create a libnftables context (out of memory?)");
    int rc = nft->run_cmd_from_buffer(ctx, script.c_str());
    // Each getter hands the buffer over and empties it: call each once.
    const char* o = nft->ctx_get_output_buffer(ctx);
    const char* er = nft->ctx_get_error_buffer(ctx);
    std::string out = o ? o : "", err = er ? er : "";
    if (rc != 0)
      throw Error(what + ": nftables refused it: " + trim(err.empty() ? "unknown error" : err) +
                      (err.find("Operation not permitted") != std::string::npos ? " (sbx needs root)" : ""),
                  EINVAL);
    return out;
  }
#endif
  auto [rc, text] = run_nft_command(script);
  if (rc == 127)
    throw Error(what + ": the nft command is missing; install nftables (apt-get install nftables)", ENOENT);
  if (rc != 0) throw Error(what + ": nftables refused it: " + trim(text), EINVAL);
  return text;
}

std::string nft_problem() noexcept {
  try {
    // A table sbx never uses, made and removed in one transaction: proves the
    // kernel's nf_tables and our permission without leaving anything.
    nft_apply("add table inet sbx_probe\ndelete table inet sbx_probe\n", "probe nftables");
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

const char* nft_backend() noexcept {
#ifdef SBX_HAVE_NFTABLES
  if (nft_lib()) return "libnftables";
#endif
  return "nft command";
}

}  // namespace sbx::runtime
