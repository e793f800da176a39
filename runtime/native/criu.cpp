#include "runtime/native/criu.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/linux/run_command.h"

namespace sbx::runtime {

namespace {

bool executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

/// Runs `argv`, returns its exit code and (through `out`) its output (at most
/// the last `max` bytes). Code -1 when no temp file could be made.
int run_captured(const std::vector<std::string>& argv, std::string& out, size_t max = 8000) {
  char tmpl[] = "/tmp/sbx-criu.XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) return -1;
  ::close(fd);
  int code = -1;
  try {
    code = run_logged(argv, tmpl);
    out = fs::read_file(tmpl);
    if (out.size() > max) out = out.substr(out.size() - max);
  } catch (const Error& e) {
    out = e.what();
  }
  ::unlink(tmpl);
  return code;
}

std::string first_error_line(const std::string& out) {
  size_t p = out.find("Error");
  if (p == std::string::npos) return out.substr(0, out.find('\n'));
  size_t e = out.find('\n', p);
  return out.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

CriuInfo probe_criu() {
  CriuInfo i;
  i.path = find_criu();
  if (i.path.empty()) {
    i.error = "CRIU (https://criu.org) is not installed (looked in $SBX_CRIU, " + std::string(kCriuPrefix) +
              "/sbin and PATH); .ci/criu-build.sh (run by tests/setup.sh) builds CRIU 4.1.1 there";
    return i;
  }
  std::string out;
  if (run_captured({i.path, "--version"}, out) == 0) {
    // "Version: 4.1.1\n"
    size_t p = out.find("Version: ");
    if (p != std::string::npos) {
      size_t s = p + 9, e = out.find_first_of("\r\n", s);
      i.version = out.substr(s, e == std::string::npos ? std::string::npos : e - s);
    }
  }
  int code = run_captured({i.path, "check"}, out);
  // criu check prints "Looks good." on success; some versions exit 0 with errors.
  i.works = code == 0 && out.find("Error") == std::string::npos;
  if (!i.works) {
    std::string why = out.find("vdso") != std::string::npos
                          ? " (this CRIU cannot parse this kernel's vDSO layout; CRIU 4.1 or newer fixes it: "
                            ".ci/criu-build.sh builds it)"
                          : "";
    std::string first = first_error_line(out);
    if (first.empty()) first = "exit " + std::to_string(code) + " with no output";
    i.error = "'" + i.path + " check' fails on this host: " + first + why;
    return i;
  }
  for (const char* f : {"uffd-noncoop", "mem_dirty_track", "pidfd_store", "timens", "external_net_ns", "clone3_set_tid"}) {
    std::string o;
    i.features[f] = run_captured({i.path, "check", "--feature", f}, o) == 0;
  }
  return i;
}

}  // namespace

std::string find_criu() {
  if (const char* env = std::getenv("SBX_CRIU"); env && *env) return executable(env) ? env : "";
  const std::string own = std::string(kCriuPrefix) + "/sbin/criu";
  if (executable(own)) return own;
  for (const char* d : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin"}) {
    std::string p = std::string(d) + "/criu";
    if (executable(p)) return p;
  }
  return "";
}

const CriuInfo& criu_info() {
  static std::once_flag once;
  static CriuInfo info;
  std::call_once(once, [] { info = probe_criu(); });
  return info;
}

std::string describe_criu(const CriuInfo& i) {
  if (!i.works) return "memory snapshots: no (" + i.error + ")";
  std::string s = "memory snapshots: CRIU " + (i.version.empty() ? std::string("?") : i.version) + " at " + i.path;
  std::string feats;
  for (const auto& [f, ok] : i.features)
    if (ok) feats += (feats.empty() ? "" : ", ") + f;
  if (!feats.empty()) s += " (" + feats + ")";
  return s;
}

std::string criu_spec_blocker(const SandboxSpec& spec) {
  for (const auto& d : spec.devices) {
    if (d.path.rfind("/dev/nvidia", 0) == 0 || d.path.rfind("/dev/dri/", 0) == 0 || d.path == "/dev/kfd")
      return "it has GPUs (" + d.path +
             "), and CRIU cannot save GPU state: device memory and driver objects live outside the processes "
             "(CRIU's CUDA and AMD GPU plugins are not built with sbx's CRIU)";
  }
  if (!spec.ldconfig_dirs.empty())
    return "it has GPU driver libraries bind-mounted (--gpus), and CRIU cannot save GPU state";
  return "";
}

void fail_native_checkpoint() {
  const std::string hint = "; checkpoint a sandbox started with --runtime gvisor instead";
  const CriuInfo& i = criu_info();
  if (i.path.empty())
    throw Error("memory snapshots of native sandboxes need CRIU (https://criu.org), which is not installed (" +
                i.error + ")" + hint);
  if (!i.works)
    throw Error("memory snapshots of native sandboxes need a working CRIU, but " + i.error + hint, 0, kExitSbxFailed);
  // A working CRIU: the caller asked for no reason (refuse_native_checkpoint
  // asks only when CRIU is missing or broken).
  throw Error("this host has a working CRIU (" + i.path + ", " + i.version +
              "); the sandbox's own refusal says why it cannot be checkpointed" + hint);
}

}  // namespace sbx::runtime
