// Fresh helpers (runtime/linux/self_exec.h): the sealed image, and a real
// sandbox started and entered through them (this binary's main runs the
// helpers, as sbx's does). Each case runs in a forked child, since
// use_fresh_helpers() switches the whole process for good.
#include <doctest.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "runtime/linux/self_exec.h"
#include "runtime/native/exec.h"
#include "runtime/native/fresh_helper.h"
#include "runtime/native/native_backend.h"
#include "spec/spec_json.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;
namespace fsys = std::filesystem;

namespace {

/// Runs `body` in a forked child; returns what it returned ("" = fine), or
/// how the child ended when it did not say.
std::string in_child(const std::function<std::string()>& body) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    out = "R" + out;
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (got.empty() || got[0] != 'R') return "the child ended without an answer (wait status " + std::to_string(st) + ")";
  return got.substr(1);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("fresh helpers: the image is a sealed copy of the binary that nobody can write") {
  std::string err = in_child([]() -> std::string {
    if (fresh_helper_image() != -1) return "a fresh process already had an image";
    use_fresh_helpers();
    int img = fresh_helper_image();
    if (img < 0) return "no image after use_fresh_helpers";
    use_fresh_helpers();  // once only
    if (fresh_helper_image() != img) return "a second call made another image";
    const int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    if ((::fcntl(img, F_GET_SEALS) & seals) != seals) return "not sealed";
    if ((::fcntl(img, F_GETFL) & O_ACCMODE) != O_RDONLY) return "the image fd is writable (execve would fail: ETXTBSY)";
    if (!(::fcntl(img, F_GETFD) & FD_CLOEXEC)) return "the image fd is not close-on-exec";
    struct stat ist {};
    if (::fstat(img, &ist) < 0 || (ist.st_mode & 07777) != 0555) return "the image's mode is not 0555";
    if (::fchmod(img, 0444) == 0) return "the image's exec bits could be changed (F_SEAL_EXEC)";
    {
      // Even reopened for writing (as host root in a sandbox could through
      // /proc/PID/exe: CAP_DAC_OVERRIDE passes the mode bits).
      Fd rw(::open(("/proc/self/fd/" + std::to_string(img)).c_str(), O_RDWR | O_CLOEXEC));
      if (rw.fd >= 0) {
        if (::pwrite(rw.fd, "x", 1, 0) >= 0) return "a write to the sealed image went through";
        if (::ftruncate(rw.fd, 0) == 0) return "the sealed image could be truncated";
      }
    }  // (closed: an fd open for writing makes execve fail with ETXTBSY)
    // The copy is the binary's loadable part (no debug information), its
    // section headers dropped from the ELF header, and it runs.
    std::string copy = slurp("/proc/self/fd/" + std::to_string(img)), self = slurp("/proc/self/exe");
    if (copy.size() < sizeof(Elf64_Ehdr) || copy.size() > self.size()) return "the copy's size is " + std::to_string(copy.size());
    if (copy.compare(sizeof(Elf64_Ehdr), std::string::npos, self, sizeof(Elf64_Ehdr), copy.size() - sizeof(Elf64_Ehdr)) != 0)
      return "the copy differs from the binary";
    if (copy.size() < self.size()) {
      Elf64_Ehdr eh;
      std::memcpy(&eh, copy.data(), sizeof eh);
      if (eh.e_shoff != 0 || eh.e_shnum != 0) return "a trimmed copy still names section headers";
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      char* const argv[] = {const_cast<char*>("unit"), const_cast<char*>("--version"), nullptr};
      char* const envp[] = {nullptr};
      ::syscall(SYS_execveat, img, "", argv, envp, AT_EMPTY_PATH);
      ::_exit(99);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "the copy does not run (wait status " + std::to_string(st) + ")";
    return "";
  });
  CHECK_MESSAGE(err.empty(), err);
}

TEST_CASE("fresh helpers: a command line no sbx made exits 125 with a message, whatever its later words") {
  std::string err = in_child([]() -> std::string {
    // (stderr to a file: the message is checked, not printed)
    char path[] = "/tmp/sbx-helper-msg-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0) return "mkstemp failed";
    ::unlink(path);
    ::dup2(fd, 2);
    std::string bad_first = "not-the-helper-arg", helper = kHelperArg, exec = "exec", init = "init", three = "3", bogus = "bogus";
    std::vector<std::vector<char*>> lines = {
        {bad_first.data(), bad_first.data(), exec.data(), three.data()},  // "exec FD" after a word that is not the helper's
        {bad_first.data(), helper.data(), bogus.data()},
        {bad_first.data(), helper.data(), init.data(), three.data()},  // init needs two fds
    };
    for (auto& argv : lines) {
      int rc = run_fresh_helper(static_cast<int>(argv.size()), argv.data());
      if (rc != 125) return "exit " + std::to_string(rc) + " for '" + argv[1] + " " + argv[2] + "'";
    }
    std::string msg(4096, '\0');
    ssize_t n = ::pread(fd, msg.data(), msg.size(), 0);
    msg.resize(n > 0 ? static_cast<size_t>(n) : 0);
    // One "not a command" per line: none of them was taken for a request.
    size_t said = 0;
    for (size_t at = msg.find("not a command"); at != std::string::npos; at = msg.find("not a command", at + 1)) ++said;
    if (said != lines.size()) return "stderr says 'not a command' " + std::to_string(said) + " times: '" + msg + "'";
    return "";
  });
  CHECK_MESSAGE(err.empty(), err);
}

TEST_CASE("fresh helpers: a real sandbox started and entered through them is no fork of the caller (needs root and /bin/busybox)") {
  const char* bb = "/bin/busybox";
  if (::geteuid() != 0 || ::access(bb, X_OK) != 0) {
    MESSAGE("skipped: needs root and /bin/busybox");
    return;
  }
  sbx::test::TempDir d;
  std::string root = d.path + "/rootfs";
  fsys::create_directories(root + "/bin");
  fsys::create_directories(root + "/etc");
  fsys::copy_file(bb, root + "/bin/busybox");
  fsys::create_symlink("busybox", root + "/bin/sh");
  std::ofstream(root + "/etc/passwd") << "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n";
  std::string err = in_child([&]() -> std::string {
    use_fresh_helpers();
    SandboxSpec spec;
    spec.layer_dirs = {root};
    spec.process.args = {"/bin/sh", "-c", "sleep 60"};
    spec.process.env = {"PATH=/bin", "FROM_SPEC=1"};
    spec.process.capabilities = default_capabilities();
    spec.resources.pids_limit = 16;
    StartOptions so;
    so.run_root = d.path + "/run";
    so.userns = true;
    Sandbox sb = start(spec, so);
    // The init is a clone of the helper, whose image is the sealed memfd.
    char exe[256] = {};
    if (::readlink(("/proc/" + std::to_string(sb.pid) + "/exe").c_str(), exe, sizeof exe - 1) < 0)
      return "readlink the init's exe: " + std::string(std::strerror(errno));
    if (std::string(exe).rfind("/memfd:sbx", 0) != 0) return std::string("the init runs ") + exe + ", not the fresh image";
    SandboxState st = read_state(sb.state_dir);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) < 0) return "pipe";
    Fd out_r(out[0]), out_w(out[1]);
    ExecRequest req;
    req.args = {"/bin/sh", "-c", "echo \"$FROM_SPEC $EXTRA $(id -u)\"; exit 3"};
    req.env = {"EXTRA=2"};
    req.user = "nobody";
    req.stdout_fd = out_w.fd;
    req.forward_signals = false;
    int rc = exec_in_sandbox(sb.state_dir, st, spec, req);
    out_w.reset();
    std::string text;
    char buf[256];
    ssize_t n;
    while ((n = ::read(out_r.fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    if (rc != 3) return "exec's exit code " + std::to_string(rc) + ", output '" + text + "'";
    if (text != "1 2 65534\n") return "exec's output '" + text + "'";
    req.args = {"/no/such/cmd"};
    req.user.clear();
    try {
      exec_in_sandbox(sb.state_dir, st, spec, req);
      return "an exec of a missing command did not throw";
    } catch (const Error& e) {
      if (e.exit_code() != 127) return "a missing command: exit code " + std::to_string(e.exit_code()) + " (" + e.what() + ")";
    }
    sb.destroy();
    if (!fsys::is_empty(so.run_root)) return "the run root is not empty after destroy";
    return "";
  });
  CHECK_MESSAGE(err.empty(), err);
}

TEST_CASE("spec_to_json / spec_from_json keep every field") {
  SandboxSpec s;
  s.id = std::string(64, 'a');
  s.name = "n";
  s.image_ref = "busybox:1";
  s.image_id = std::string(64, 'b');
  s.layer_dirs = {"/l1", "/l2"};
  s.upper_dir = "/u";
  s.disk_bytes = 123;
  s.process.args = {"sh", "-c", "x y"};
  s.process.env = {"A=1", "B="};
  s.process.cwd = "/w";
  s.process.uid = 5;
  s.process.gid = 6;
  s.process.additional_gids = {7, 8};
  s.process.user = "u:g";
  s.process.terminal = true;
  s.process.rlimits = {{"RLIMIT_NOFILE", 10, 20}};
  s.process.no_new_privileges = false;
  s.process.capabilities = {"CAP_CHOWN"};
  s.hostname = "h";
  s.readonly_rootfs = true;
  s.mounts = {{"/d", "bind", "/s", {"ro", "idmap=host"}}, {"/t", "tmpfs", "tmpfs", {}}};
  s.devices = {{"/dev/x", 'b', 1, 2, 0600, 3, 4, "/host/x"}};
  s.resources.memory_bytes = 1 << 20;
  s.resources.cpus = 1.5;
  s.resources.pids_limit = 9;
  s.resources.devices = {{true, 'c', 195, -1, "rw"}};
  s.network = NetworkMode::Private;
  s.create_container_hooks = {{"/hook", {"a"}, {"E=1"}, 5}, {"/hook2", {}, {}, std::nullopt}};
  s.ldconfig_dirs = {"/lib/x"};
  s.uid_mappings = {{0, 100000, 65536}};
  s.gid_mappings = {{0, 200000, 65536}};
  s.annotations = {{"k", "v"}};
  s.labels = {{"l", "w"}};
  s.runtime = "gvisor";
  s.timeout = std::chrono::milliseconds(1500);
  s.idle_timeout = std::chrono::milliseconds(2500);
  s.stdin_open = true;
  s.stdin_pty_master = true;
  s.net.allow_egress = {"192.0.2.0/24"};
  s.net.deny_egress = {"198.51.100.1"};
  s.net.publish = {{"127.0.0.1", 8080, 80, "udp"}};
  s.net.dns = {"203.0.113.53"};
  s.net.extra_hosts = {{"a", "192.0.2.1"}};
  auto j = spec::spec_to_json(s);
  SandboxSpec r = spec::spec_from_json(nlohmann::json::parse(j.dump()));
  CHECK(spec::spec_to_json(r) == j);
  CHECK(r.layer_dirs == s.layer_dirs);
  CHECK(r.upper_dir == "/u");
  CHECK(r.devices.at(0).host_path == "/host/x");
  CHECK(r.devices.at(0).type == 'b');
  CHECK(*r.resources.cpus == doctest::Approx(1.5));
  CHECK(r.network == NetworkMode::Private);
  CHECK(r.create_container_hooks.at(0).timeout_s == 5);
  CHECK(!r.create_container_hooks.at(1).timeout_s);
  CHECK(r.net.publish.at(0).protocol == "udp");
  CHECK(r.net.extra_hosts.at(0).second == "192.0.2.1");
  CHECK(r.timeout.count() == 1500);
  CHECK(r.stdin_pty_master);
  CHECK(!r.process.no_new_privileges);
  // A user-defined network's attachments travel too (else the init would see none).
  s.network = NetworkMode::User;
  s.net.networks = {{"neta", {"db", "cache"}, "192.0.2.9"}, {"netb", {}, ""}};
  r = spec::spec_from_json(nlohmann::json::parse(spec::spec_to_json(s).dump()));
  CHECK(r.network == NetworkMode::User);
  REQUIRE(r.net.networks.size() == 2);
  CHECK(r.net.networks[0].aliases.at(1) == "cache");
  CHECK(r.net.networks[0].ip == "192.0.2.9");
  CHECK(r.net.networks[1].network == "netb");
  CHECK(r.process.rlimits.at(0).hard == 20);
  // Malformed: the field's name in the error, never a half-read spec.
  auto bad = j;
  bad["mounts"][0].erase("source");
  CHECK_THROWS_AS(spec::spec_from_json(bad), Error);
  bad = j;
  bad["network"] = 7;
  CHECK_THROWS_AS(spec::spec_from_json(bad), Error);
}
