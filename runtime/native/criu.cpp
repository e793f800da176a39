#include "runtime/native/criu.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/run_command.h"

namespace sbx::runtime {

namespace {

std::string tail_of(const std::string& path, size_t max) {
  try {
    std::string s = fs::read_file(path);
    return s.size() > max ? s.substr(s.size() - max) : s;
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

void fail_native_checkpoint() {
  const std::string hint = "; checkpoint a sandbox started with --runtime gvisor instead";
  std::string criu;
  for (const char* p : {"/usr/sbin/criu", "/usr/bin/criu", "/usr/local/sbin/criu", "/usr/local/bin/criu"})
    if (::access(p, X_OK) == 0) {
      criu = p;
      break;
    }
  if (criu.empty())
    throw Error("memory snapshots of native sandboxes need CRIU (https://criu.org), which is not installed" + hint);
  char tmpl[] = "/tmp/sbx-criu-check.XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) throw_errno("create temp file for criu check");
  ::close(fd);
  int code = run_logged({criu, "check"}, tmpl);
  std::string out = tail_of(tmpl, 4000);
  ::unlink(tmpl);
  // criu check prints "Looks good." on success; some versions exit 0 with errors.
  bool ok = code == 0 && out.find("Error") == std::string::npos;
  if (!ok) {
    std::string first;
    size_t p = out.find("Error");
    first = p == std::string::npos ? out.substr(0, out.find('\n')) : out.substr(p, out.find('\n', p) - p);
    std::string why = out.find("vdso") != std::string::npos
                          ? " (this CRIU cannot parse this kernel's vDSO layout; CRIU 4.1 or newer fixes it)"
                          : "";
    throw Error("memory snapshots of native sandboxes need a working CRIU, but 'criu check' fails on this host: " +
                    first + why + hint,
                0, kExitSbxFailed);
  }
  throw Error("this host has a working CRIU, but sbx does not checkpoint native sandboxes with CRIU yet" + hint);
}

}  // namespace sbx::runtime
