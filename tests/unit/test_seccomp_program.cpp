#include <doctest.h>
#include <seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "runtime/linux/seccomp.h"

using namespace sbx;

namespace {
// What libseccomp exports for a context, read back through a pipe.
std::vector<uint8_t> export_bpf(scmp_filter_ctx ctx) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  REQUIRE(seccomp_export_bpf(ctx, p[1]) == 0);
  ::close(p[1]);
  std::vector<uint8_t> out;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  ::close(p[0]);
  return out;
}
}  // namespace

TEST_CASE("the precompiled default seccomp program is stable and holds the profile's rules") {
  std::vector<uint8_t> prog = runtime::default_seccomp_bpf();
  REQUIRE(!prog.empty());
  CHECK(prog.size() % 8 == 0);  // struct sock_filter is 8 bytes
  // An allow-all filter is much shorter: the profile's rules are in it.
  scmp_filter_ctx allow = seccomp_init(SCMP_ACT_ALLOW);
  CHECK(export_bpf(allow).size() < prog.size());
  seccomp_release(allow);
  // Stable: the same bytes every time.
  runtime::prepare_default_seccomp();
  CHECK(runtime::default_seccomp_bpf() == prog);
}

TEST_CASE("the precompiled default seccomp program denies what the profile denies") {
  runtime::prepare_default_seccomp();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      runtime::install_default_seccomp();
    } catch (...) {
      ::_exit(10);
    }
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) ::_exit(11);
    // unshare(2) is denied with EPERM; getpid(2) still works.
    if (::unshare(0) != -1 || errno != EPERM) ::_exit(12);
    if (::getpid() <= 0) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
