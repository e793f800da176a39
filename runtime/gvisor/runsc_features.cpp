#include "runtime/gvisor/runsc_features.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "runtime/gvisor/nvproxy.h"

extern char** environ;

namespace sbx::runtime {

namespace {

// Runs argv with stdout+stderr captured (stdin /dev/null), killing it after `timeout_ms`.
std::string capture(const std::vector<std::string>& argv, int timeout_ms) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("pipe for " + argv[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  if (rc != 0) {
    ::close(p[0]);
    throw_errno_hint("run " + argv[0], "is gVisor's runsc installed and on PATH?", rc);
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[8192];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    struct pollfd pf{p[0], POLLIN, 0};
    int n = ::poll(&pf, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t r = ::read(p[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (out.size() < (4u << 20)) out.append(buf, static_cast<size_t>(r));
  }
  ::close(p[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return out;
}


// Whether the help text of flag `name` in `runsc flags` output (from its
// "  -name" line up to the next flag's line) contains `needle`.
bool flag_help_has(std::string_view out, std::string_view name, std::string_view needle) {
  const std::string text = "\n" + std::string(out);  // every flag line then starts with "\n  -"
  const std::string key = "\n  -" + std::string(name);
  size_t pos = text.find(key);
  while (pos != std::string::npos) {
    size_t after = pos + key.size();
    if (after >= text.size() || text[after] == ' ' || text[after] == '\n' || text[after] == '\t') break;
    pos = text.find(key, after);  // a longer flag with this prefix
  }
  if (pos == std::string::npos) return false;
  size_t next = text.find("\n  -", pos + key.size());
  return text.substr(pos, next == std::string::npos ? std::string::npos : next - pos).find(needle) != std::string::npos;
}

uint32_t release_date(std::string_view version) {
  // "runsc version 0.0~20240729.0" (Debian) or "runsc version release-20240729.0":
  // the first run of 8 digits starting with 20.
  for (size_t i = 0; i + 8 <= version.size(); ++i) {
    if (version[i] != '2' || version[i + 1] != '0') continue;
    if (i > 0 && std::isdigit(static_cast<unsigned char>(version[i - 1]))) continue;
    size_t n = 0;
    while (i + n < version.size() && std::isdigit(static_cast<unsigned char>(version[i + n]))) ++n;
    if (n == 8) return static_cast<uint32_t>(std::stoul(std::string(version.substr(i, 8))));
  }
  return 0;
}

}  // namespace

RunscFeatures parse_runsc_features(std::string_view version_out, std::string_view flags_out) {
  RunscFeatures f;
  f.version = std::string(version_out.substr(0, version_out.find('\n')));
  f.release = release_date(f.version);
  f.nvproxy = runsc_output_has_nvproxy(flags_out);
  // Later gVisor documents "{mount}:{medium}[,size={size}]" in -overlay2's
  // help; 20240729 has no size (it rejects "root:memory,size=1m").
  f.overlay_size = flag_help_has(flags_out, "overlay2", "size=");
  f.exec_tty = f.release >= kExecTtyRelease;
  return f;
}

RunscFeatures runsc_features(const std::string& runsc) {
  struct stat st{};
  if (::stat(runsc.c_str(), &st) < 0) throw_errno_hint("stat " + runsc, "check --runsc or $PATH");
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, RunscFeatures> cache;
  Key key{runsc, static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec),
          static_cast<int64_t>(st.st_mtim.tv_nsec)};
  {
    std::lock_guard<std::mutex> l(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::string ver = capture({runsc, "--version"}, 5000);
  if (ver.rfind("runsc version", 0) != 0)
    throw Error(runsc + " --version did not name a runsc version (got '" + ver.substr(0, ver.find('\n')) +
                "'); is it gVisor's runsc? check --runsc");
  RunscFeatures f = parse_runsc_features(ver, capture({runsc, "flags"}, 5000));
  f.path = runsc;
  // Which drivers nvproxy knows decides whether --gpus can start at all: a
  // runsc older than the host's driver fails deep in its start ("unsupported
  // Nvidia driver version") after the sandbox is half set up.
  if (f.nvproxy) f.nvproxy_drivers = parse_nvproxy_drivers(capture({runsc, "nvproxy", "list-supported-drivers"}, 5000));
  std::lock_guard<std::mutex> l(mu);
  cache[key] = f;
  return f;
}

namespace {
// Numeric, part by part: "550.90.07" < "550.100.01".
bool version_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    size_t ie = a.find('.', i), je = b.find('.', j);
    if (ie == std::string::npos) ie = a.size();
    if (je == std::string::npos) je = b.size();
    unsigned long x = i < a.size() ? std::stoul(a.substr(i, ie - i)) : 0;
    unsigned long y = j < b.size() ? std::stoul(b.substr(j, je - j)) : 0;
    if (x != y) return x < y;
    i = ie + 1;
    j = je + 1;
  }
  return false;
}
}  // namespace

std::vector<std::string> parse_nvproxy_drivers(std::string_view out) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    std::string_view line = out.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? out.size() : nl + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    bool ok = !line.empty() && std::isdigit(static_cast<unsigned char>(line.front())) &&
              std::isdigit(static_cast<unsigned char>(line.back())) && line.find('.') != std::string_view::npos;
    for (char c : line) ok = ok && (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
    if (ok && line.find("..") == std::string_view::npos) v.emplace_back(line);
  }
  std::sort(v.begin(), v.end(), version_less);
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool nvproxy_supports_driver(const RunscFeatures& f, const std::string& driver_version) {
  if (f.nvproxy_drivers.empty() || driver_version.empty()) return true;
  return std::find(f.nvproxy_drivers.begin(), f.nvproxy_drivers.end(), driver_version) != f.nvproxy_drivers.end();
}

std::string describe_runsc_features(const RunscFeatures& f) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string nv = yn(f.nvproxy);
  if (f.nvproxy && !f.nvproxy_drivers.empty()) nv += " (drivers up to " + f.nvproxy_drivers.back() + ")";
  return "nvproxy " + nv + ", overlay-size " + yn(f.overlay_size) + ", exec-tty " + yn(f.exec_tty);
}

}  // namespace sbx::runtime
