// Unit tests of the native runtime's pure parts (ulimits, users, image config,
// capabilities) and one real start/wait/destroy through the library API.
#include <doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "runtime/linux/capabilities.h"
#include "runtime/image_config.h"
#include "runtime/native/native_backend.h"
#include "runtime/linux/rlimits.h"
#include "runtime/user.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;
namespace fsys = std::filesystem;

using sbx::test::TempDir;

namespace {
void write(const std::string& path, const std::string& text) {
  fsys::create_directories(fsys::path(path).parent_path());
  std::ofstream(path) << text;
}
}  // namespace

TEST_CASE("--ulimit parsing as docker") {
  Rlimit r = parse_ulimit("nofile=1024:2048");
  CHECK(r.type == "RLIMIT_NOFILE");
  CHECK(r.soft == 1024);
  CHECK(r.hard == 2048);
  r = parse_ulimit("nproc=512");
  CHECK(r.soft == 512);
  CHECK(r.hard == 512);
  CHECK(parse_ulimit("core=unlimited").hard == RLIM_INFINITY);
  CHECK_THROWS_AS(parse_ulimit("nofile"), Error);
  CHECK_THROWS_AS(parse_ulimit("bogus=1"), Error);
  CHECK_THROWS_AS(parse_ulimit("nofile=abc"), Error);
  CHECK_THROWS_AS(parse_ulimit("nofile=10:5"), Error);
}

TEST_CASE("rlimits above the hard limit are clamped with a warning") {
  struct rlimit cur {};
  getrlimit(RLIMIT_NOFILE, &cur);
  std::vector<Rlimit> l = {{"RLIMIT_NOFILE", 64, cur.rlim_max}};
  CHECK(clamp_rlimits(l).empty());
  if (cur.rlim_max != RLIM_INFINITY) {
    l = {{"RLIMIT_NOFILE", RLIM_INFINITY, RLIM_INFINITY}};
    auto w = clamp_rlimits(l);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("CAP_SYS_RESOURCE") != std::string::npos);
    CHECK(l[0].hard == cur.rlim_max);
    CHECK(l[0].soft == cur.rlim_max);
  }
}

TEST_CASE("users resolve against the image's passwd and group") {
  TempDir d;
  write(d.path + "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n");
  write(d.path + "/etc/group", "root:x:0:\nalice:x:1000:\nwheel:x:10:alice,bob\ndocker:x:999:alice\n");
  ResolvedUser u = resolve_user("", d.path);
  CHECK(u.uid == 0);
  CHECK(u.home == "/root");
  u = resolve_user("alice", d.path);
  CHECK(u.uid == 1000);
  CHECK(u.gid == 1000);
  CHECK(u.home == "/home/alice");
  CHECK(u.groups == std::vector<uint32_t>{10, 999});
  u = resolve_user("alice:wheel", d.path);
  CHECK(u.gid == 10);
  u = resolve_user("1000", d.path);
  CHECK(u.uid == 1000);
  CHECK(u.gid == 1000);
  u = resolve_user("4242", d.path);  // not in passwd: gid 0, as docker
  CHECK(u.uid == 4242);
  CHECK(u.gid == 0);
  u = resolve_user("4242:77", d.path);
  CHECK(u.gid == 77);
  CHECK_THROWS_AS(resolve_user("nobody-here", d.path), Error);
  CHECK_THROWS_AS(resolve_user("alice:nogroup", d.path), Error);
}

TEST_CASE("group_id reads a group's gid from ROOT/etc/group itself (no NSS)") {
  TempDir d;
  write(d.path + "/etc/group", "# comment\nroot:x:0:\nsbx:x:4321:alice\nbad:x:notanumber:\n");
  CHECK(group_id("sbx", d.path) == std::optional<uint32_t>(4321));
  CHECK(group_id("root", d.path) == std::optional<uint32_t>(0));
  CHECK_FALSE(group_id("docker", d.path).has_value());
  CHECK_FALSE(group_id("sb", d.path).has_value());  // whole names only
  CHECK_THROWS_AS(group_id("bad", d.path), Error);
  TempDir empty;
  CHECK_FALSE(group_id("sbx", empty.path).has_value());  // no /etc/group
}

TEST_CASE("image Entrypoint/Cmd/Env/WorkingDir/User combine as docker") {
  oci::ImageConfig img;
  img.entrypoint = {"/entry"};
  img.cmd = {"default-arg"};
  img.env = {"PATH=/img/bin", "A=image"};
  img.working_dir = "/srv";
  img.user = "app";
  SandboxSpec spec;
  spec.hostname = "box";
  apply_image_config(spec, img, {});
  CHECK(spec.process.args == std::vector<std::string>{"/entry", "default-arg"});
  CHECK(spec.process.cwd == "/srv");
  CHECK(spec.process.user == "app");
  CHECK(std::find(spec.process.env.begin(), spec.process.env.end(), "PATH=/img/bin") != spec.process.env.end());
  CHECK(std::find(spec.process.env.begin(), spec.process.env.end(), "HOSTNAME=box") != spec.process.env.end());

  ProcessOverrides o;
  o.command = {"x", "y"};
  o.env = {"A=cli"};
  o.workdir = "/tmp";
  o.user = "0:0";
  apply_image_config(spec, img, o);
  CHECK(spec.process.args == std::vector<std::string>{"/entry", "x", "y"});
  CHECK(std::find(spec.process.env.begin(), spec.process.env.end(), "A=cli") != spec.process.env.end());
  CHECK(std::find(spec.process.env.begin(), spec.process.env.end(), "A=image") == spec.process.env.end());
  CHECK(spec.process.cwd == "/tmp");
  CHECK(spec.process.user == "0:0");

  ProcessOverrides e;  // --entrypoint resets the image's Cmd
  e.entrypoint = std::vector<std::string>{"/bin/sh"};
  apply_image_config(spec, img, e);
  CHECK(spec.process.args == std::vector<std::string>{"/bin/sh"});

  oci::ImageConfig empty;
  CHECK_THROWS_AS(apply_image_config(spec, empty, {}), Error);
  ProcessOverrides rel;
  rel.command = {"true"};
  rel.workdir = "relative";
  CHECK_THROWS_AS(apply_image_config(spec, empty, rel), Error);
}

TEST_CASE("--env-file format") {
  TempDir d;
  write(d.path + "/env", "# comment\n\nA=1\nB=has=equals\r\n  C=indented\n");
  auto env = parse_env_file(d.path + "/env");
  CHECK(env == std::vector<std::string>{"A=1", "B=has=equals", "C=indented"});
  write(d.path + "/bad", "=novalue\n");
  CHECK_THROWS_AS(parse_env_file(d.path + "/bad"), Error);
}

TEST_CASE("the default capability set is docker's (CapEff a80425fb)") {
  auto caps = parse_capabilities(default_capabilities());
  uint64_t mask = 0;
  for (int c : caps) mask |= uint64_t{1} << c;
  CHECK(mask == 0xa80425fbULL);
  CHECK_THROWS_AS(parse_capabilities({"CAP_NOT_A_CAP"}), Error);
  CHECK(parse_capabilities({"chown"}) == std::vector<int>{0});
}

TEST_CASE("library API: start, wait, destroy a real sandbox (needs root and busybox)") {
  const char* bb = "/bin/busybox";
  if (::geteuid() != 0 || ::access(bb, X_OK) != 0) {
    MESSAGE("skipped: needs root and /bin/busybox");
    return;
  }
  TempDir d;
  std::string root = d.path + "/rootfs";
  fsys::create_directories(root + "/bin");
  fsys::copy_file(bb, root + "/bin/busybox");
  fsys::create_symlink("busybox", root + "/bin/sh");
  SandboxSpec spec;
  spec.layer_dirs = {root};
  spec.process.args = {"/bin/sh", "-c", "exit 7"};
  spec.process.env = {"PATH=/bin"};
  spec.process.capabilities = default_capabilities();
  spec.resources.pids_limit = 16;
  StartOptions so;
  so.run_root = d.path + "/run";
  std::vector<std::string> cgroups;
  {
    Sandbox sb = start(spec, so);
    CHECK(sb.pid > 0);
    CHECK(sb.pidfd >= 0);
    CHECK(fsys::exists(sb.state_dir + "/state.json"));
    cgroups = sb.cgroup.paths();
    CHECK(!cgroups.empty());
    ExitStatus st = wait(sb, WaitOptions{});
    CHECK(st.exit_code == 7);
    CHECK(!st.timed_out);
    sb.destroy();
  }
  for (const auto& c : cgroups) CHECK(!fsys::exists(c));
  CHECK(fsys::is_empty(so.run_root));

  spec.process.args = {"/bin/sh", "-c", "sleep 5"};
  {
    Sandbox sb = start(spec, so);
    WaitOptions wo;
    wo.timeout = std::chrono::milliseconds(200);
    ExitStatus st = wait(sb, wo);
    CHECK(st.timed_out);
  }  // the destructor cleans up
  CHECK(fsys::is_empty(so.run_root));

  spec.process.args = {"/no/such/cmd"};
  try {
    start(spec, so);
    FAIL("start of a missing command did not throw");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 127);
  }
  CHECK(fsys::is_empty(so.run_root));
}
