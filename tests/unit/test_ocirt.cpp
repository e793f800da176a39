// ocirt/: config.json as sbx-runc reads it (fields kept, unsupported ones
// refused by name), signal names, ids, the state JSON.
#include <doctest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "ocirt/config.h"
#include "ocirt/container.h"
#include "ocirt/gvisor_delegate.h"
#include "runtime/linux/seccomp.h"
#include "runtime/linux/signals.h"
#include "ocirt/state_store.h"

using namespace sbx;
using nlohmann::json;

namespace {
json base() {
  return json::parse(R"({
    "ociVersion": "1.0.2",
    "process": {"args": ["sh"], "env": ["PATH=/bin"], "cwd": "/w", "terminal": true,
                "user": {"uid": 1000, "gid": 100, "umask": 18, "additionalGids": [5, 6]},
                "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "ambient": ["CAP_CHOWN"]},
                "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 10, "hard": 20}],
                "noNewPrivileges": true, "oomScoreAdj": 500},
    "root": {"path": "rootfs", "readonly": true},
    "hostname": "h",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/data", "source": "/srv", "options": ["rbind", "ro"]}],
    "hooks": {"createRuntime": [{"path": "/bin/true", "timeout": 3}], "poststop": [{"path": "/bin/false"}]},
    "annotations": {"a": "b"},
    "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "network", "path": "/run/netns/x"}],
              "cgroupsPath": "/p/c",
              "resources": {"memory": {"limit": 1048576}, "pids": {"limit": 20},
                            "cpu": {"shares": 512, "quota": 50000, "period": 100000},
                            "devices": [{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rw"}]},
              "sysctl": {"net.ipv4.ip_forward": "0"},
              "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"],
              "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "architectures": ["SCMP_ARCH_X86_64"],
                          "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"},
                                       {"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]}]}}
  })");
}
std::string refusal(const json& j) {
  try {
    ocirt::parse_config(j.dump(), "/b");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("ocirt config: every field sbx-runc uses is kept") {
  auto c = ocirt::parse_config(base().dump(), "/b");
  CHECK(c.root_path == "/b/rootfs");
  CHECK(c.root_readonly);
  CHECK(c.process.args == std::vector<std::string>{"sh"});
  CHECK(c.process.cwd == "/w");
  CHECK(c.process.terminal);
  CHECK(c.process.uid == 1000);
  CHECK(c.process.gid == 100);
  CHECK(c.process.umask == 18u);
  CHECK(c.process.additional_gids == std::vector<uint32_t>{5, 6});
  CHECK(c.process.capabilities.bounding == std::vector<std::string>{"CAP_KILL"});
  CHECK(c.process.capabilities.ambient == std::vector<std::string>{"CAP_CHOWN"});
  CHECK(c.process.capabilities.permitted.empty());
  REQUIRE(c.process.rlimits.size() == 1);
  CHECK(c.process.rlimits[0].hard == 20);
  CHECK(c.process.no_new_privileges);
  CHECK(c.process.oom_score_adj == 500);
  REQUIRE(c.mounts.size() == 2);
  CHECK(c.mounts[1].type == "bind");  // a bind without a type
  CHECK(c.mounts[1].options == std::vector<std::string>{"rbind", "ro"});
  REQUIRE(c.find_namespace("network"));
  CHECK(c.find_namespace("network")->path == "/run/netns/x");
  CHECK(c.find_namespace("uts") == nullptr);
  CHECK(c.cgroups_path == "/p/c");
  CHECK(c.resources.memory_limit == 1048576);
  CHECK(c.resources.pids_limit == 20);
  CHECK(c.resources.cpu_shares == 512u);
  CHECK(c.resources.cpu_quota == 50000);
  REQUIRE(c.resources.devices.size() == 2);
  CHECK(c.resources.devices[0].type == 'a');
  CHECK(c.resources.devices[1].major == 1);
  CHECK(c.sysctl.at("net.ipv4.ip_forward") == "0");
  CHECK(c.masked_paths == std::vector<std::string>{"/proc/kcore"});
  REQUIRE(c.seccomp);
  CHECK(c.seccomp->default_errno_ret == 38u);
  CHECK(c.seccomp->syscalls[1].args[0].value == 8);
  CHECK(c.hooks.create_runtime.size() == 1);
  CHECK(c.hooks.create_runtime[0].timeout_s == 3);
  CHECK(c.hooks.poststop.size() == 1);
  CHECK(c.annotations.at("a") == "b");
  CHECK_NOTHROW(runtime::check_seccomp_profile(*c.seccomp));
}

TEST_CASE("ocirt config: what sbx-runc cannot honour is refused, naming the field") {
  json j = base();
  j["linux"]["intelRdt"] = {{"closID", "x"}};
  CHECK(refusal(j).find("linux.intelRdt") != std::string::npos);
  j = base();
  j["process"]["apparmorProfile"] = "p";
  CHECK(refusal(j).find("process.apparmorProfile") != std::string::npos);
  j = base();
  j["linux"]["namespaces"] = json::array({{{"type", "pid"}}});
  CHECK(refusal(j).find("needs a mount namespace") != std::string::npos);
  j = base();
  j["linux"]["namespaces"].push_back({{"type", "user"}, {"path", "/proc/1/ns/user"}});
  CHECK(refusal(j).find("linux.namespaces[user].path") != std::string::npos);
  j = base();
  j["linux"]["namespaces"].push_back({{"type", "time"}});
  CHECK(refusal(j).find("'time'") != std::string::npos);
  j = base();
  j["linux"]["resources"]["blockIO"] = {{"weight", 10}};
  CHECK(refusal(j).find("linux.resources.blockIO") != std::string::npos);
  j = base();
  j["process"].erase("args");
  CHECK(refusal(j).find("process.args") != std::string::npos);
  j = base();
  j["process"]["cwd"] = "relative";
  CHECK(refusal(j).find("process.cwd") != std::string::npos);
  j = base();
  j["linux"]["namespaces"].push_back({{"type", "user"}});
  CHECK(refusal(j).find("uidMappings") != std::string::npos);
  // Empty values ask for nothing and pass.
  j = base();
  j["linux"]["intelRdt"] = json::object();
  j["process"]["apparmorProfile"] = "";
  CHECK(refusal(j) == "");
  CHECK_THROWS_WITH_AS(ocirt::parse_config("{\"ociVersion\": ", "/b"), doctest::Contains("not valid JSON"), Error);
}

// config.md "Configuration": runtimes "MUST NOT generate an error if they
// encounter an unknown property. Instead they MUST ignore unknown properties."
TEST_CASE("ocirt config: unknown properties are ignored at every level") {
  json j = base();
  j["futureTopLevel"] = {{"x", 1}};
  j["process"]["futureProcessField"] = true;
  j["linux"]["futureLinuxField"] = "y";
  j["linux"]["resources"]["memory"]["futureMemoryField"] = 7;
  j["mounts"][0]["futureMountField"] = "z";
  CHECK(refusal(j) == "");
}

// config.md "POSIX process" rlimits: "The runtime MUST generate an error for
// any values which cannot be mapped to a relevant kernel interface."
TEST_CASE("ocirt config: an rlimit the kernel has no interface for is an error") {
  json j = base();
  j["process"]["rlimits"] = json::array({{{"type", "RLIMIT_NOSUCH"}, {"soft", 1}, {"hard", 1}}});
  CHECK(refusal(j).find("RLIMIT_NOSUCH") != std::string::npos);
  j["process"]["rlimits"] = json::array({{{"type", "RLIMIT_NOFILE"}, {"soft", 20}, {"hard", 10}}});
  CHECK(refusal(j).find("above the hard limit") != std::string::npos);
  j["process"]["rlimits"] = json::array({{{"type", "RLIMIT_CORE"}, {"soft", 1}, {"hard", 1}},
                                         {{"type", "RLIMIT_CORE"}, {"soft", 2}, {"hard", 2}}});
  CHECK(refusal(j).find("listed twice") != std::string::npos);
  j = base();
  j["linux"]["rootfsPropagation"] = "sideways";
  CHECK(refusal(j).find("linux.rootfsPropagation") != std::string::npos);
}

// config.md "Linux process" capabilities (runtime-spec 1.1): an unknown name
// "MUST be logged as a warning by the runtime" and must not fail.
TEST_CASE("ocirt config: an unknown capability is left out, not an error") {
  json j = base();
  j["process"]["capabilities"]["bounding"] = {"CAP_KILL", "CAP_NO_SUCH_THING"};
  auto c = ocirt::parse_config(j.dump(), "/b");
  CHECK(c.process.capabilities.bounding == std::vector<std::string>{"CAP_KILL"});
}

// config-linux.md: memory.disableOOMKiller, swappiness, kernelTCP are
// honoured (v1 memory.oom_control, memory.swappiness, kmem.tcp); a FIFO
// device and a mount or uts namespace joined by path are accepted.
TEST_CASE("ocirt config: disableOOMKiller, FIFOs and namespaces joined by path are accepted") {
  json j = base();
  j["linux"]["resources"]["memory"] = {{"limit", 1048576}, {"disableOOMKiller", true}, {"swappiness", 10}, {"kernelTCP", 1048576}};
  j["linux"]["devices"] = json::array({{{"path", "/dev/fifo"}, {"type", "p"}}});
  j["linux"]["namespaces"] = json::array({{{"type", "pid"}}, {{"type", "mount"}, {"path", "/proc/1/ns/mnt"}},
                                          {{"type", "uts"}, {"path", "/proc/1/ns/uts"}}});
  auto c = ocirt::parse_config(j.dump(), "/b");
  CHECK(c.resources.disable_oom_killer);
  CHECK(c.resources.swappiness == 10u);
  CHECK(c.resources.kernel_tcp == 1048576);
  REQUIRE(c.devices.size() == 1);
  CHECK(c.devices[0].type == 'p');
  CHECK(c.find_namespace("mount")->path == "/proc/1/ns/mnt");
  j["linux"]["resources"]["memory"]["swappiness"] = 101;
  CHECK(refusal(j).find("swappiness") != std::string::npos);
}

TEST_CASE("ocirt seccomp: unknown actions and operators are refused") {
  ocirt::Seccomp s;
  s.default_action = "SCMP_ACT_NOTIFY";
  CHECK_THROWS_WITH_AS(runtime::check_seccomp_profile(s), doctest::Contains("SCMP_ACT_NOTIFY"), Error);
  s.default_action = "SCMP_ACT_ALLOW";
  s.syscalls.push_back({{"read"}, "SCMP_ACT_ERRNO", std::nullopt, {{0, 1, 0, "SCMP_CMP_SOMETIMES"}}});
  CHECK_THROWS_WITH_AS(runtime::check_seccomp_profile(s), doctest::Contains("SCMP_CMP_SOMETIMES"), Error);
  s.syscalls.clear();
  s.architectures = {"SCMP_ARCH_NOPE"};
  CHECK_THROWS_AS(runtime::check_seccomp_profile(s), Error);
}

TEST_CASE("ocirt: signals by name and number, ids, the state JSON") {
  CHECK(runtime::parse_signal("TERM") == SIGTERM);
  CHECK(runtime::parse_signal("SIGKILL") == SIGKILL);
  CHECK(runtime::parse_signal("sigusr1") == SIGUSR1);
  CHECK(runtime::parse_signal("9") == 9);
  CHECK_THROWS_AS(runtime::parse_signal("NOPE"), Error);
  CHECK_THROWS_AS(runtime::parse_signal("0"), Error);
  CHECK(runtime::parse_signal("IOT") == SIGABRT);
  CHECK(runtime::parse_signal("RTMIN+2") == SIGRTMIN + 2);
  CHECK(runtime::parse_signal("SIGRTMAX") == SIGRTMAX);
  CHECK_THROWS_AS(runtime::parse_signal(""), Error);
  CHECK_THROWS_AS(runtime::parse_signal("RTMIN+99"), Error);
  CHECK_NOTHROW(ocirt::check_id("abc-1.2_x+y"));
  CHECK_THROWS_AS(ocirt::check_id("../x"), Error);
  CHECK_THROWS_AS(ocirt::check_id(""), Error);
  ocirt::ContainerState st;
  st.id = "c1";
  st.bundle = "/b";
  st.pid = 42;
  st.annotations = {{"k", "v"}};
  auto j = json::parse(ocirt::state_json(st, "running", false));
  CHECK(j["id"] == "c1");
  CHECK(j["status"] == "running");
  CHECK(j["pid"] == 42);
  CHECK(j["bundle"] == "/b");
  CHECK(j["annotations"]["k"] == "v");
  CHECK(json::parse(ocirt::state_json(st, "stopped", false))["pid"] == 0);
  auto f = json::parse(ocirt::features_json());
  CHECK(f["linux"]["namespaces"].size() == 7);
}

TEST_CASE("ocirt gvisor: runsc flags and config come from sbx's gVisor backend") {
  json j = base();
  ocirt::Config c = ocirt::parse_config(j.dump(), "/b");
  // Network joined by path: runsc's netstack in it; root.readonly: no overlay flag.
  CHECK(ocirt::gvisor_flags(c) == std::vector<std::string>{"--network=sandbox"});
  j["root"]["readonly"] = false;
  j["linux"]["namespaces"][2] = json{{"type", "network"}};
  c = ocirt::parse_config(j.dump(), "/b");
  CHECK(ocirt::gvisor_flags(c) == std::vector<std::string>{"--network=none", "--overlay2=none"});
  j["linux"]["namespaces"].erase(2);
  c = ocirt::parse_config(j.dump(), "/b");
  CHECK(ocirt::gvisor_flags(c).front() == "--network=host");

  // pids.limit 20: gVisor's RLIMIT_NPROC 20, the host cgroup 20*3+256;
  // root.path made absolute (runsc runs sbx-runc's copy of the bundle).
  json out = json::parse(ocirt::gvisor_config(j.dump(), c));
  CHECK(out["root"]["path"] == "/b/rootfs");
  CHECK(out["linux"]["resources"]["pids"]["limit"] == 316);
  bool nproc = false;
  for (const auto& r : out["process"]["rlimits"])
    if (r["type"] == "RLIMIT_NPROC") nproc = r["soft"] == 20 && r["hard"] == 20;
  CHECK(nproc);
  CHECK(out["process"]["rlimits"][0]["type"] == "RLIMIT_NOFILE");  // the rest kept
  // A given RLIMIT_NPROC above the limit is lowered to it; the host still gets head room.
  j["process"]["rlimits"].push_back({{"type", "RLIMIT_NPROC"}, {"soft", 1024}, {"hard", 1024}});
  c = ocirt::parse_config(j.dump(), "/b");
  out = json::parse(ocirt::gvisor_config(j.dump(), c));
  CHECK(out["process"]["rlimits"][1]["soft"] == 20);
  CHECK(out["process"]["rlimits"].size() == 2);
  CHECK(out["linux"]["resources"]["pids"]["limit"] == 316);
}

TEST_CASE("ocirt gvisor: exec --preserve-fds becomes runsc --pass-fd, the command is left alone") {
  using V = std::vector<std::string>;
  CHECK(ocirt::runsc_exec_args({"exec", "--preserve-fds", "2", "-e", "A=1", "id", "sh", "--preserve-fds", "9"}) ==
        V{"exec", "--pass-fd", "3:3", "--pass-fd", "4:4", "--env", "A=1", "id", "sh", "--preserve-fds", "9"});
  CHECK(ocirt::runsc_exec_args({"exec", "--preserve-fds=0", "id", "true"}) == V{"exec", "id", "true"});
  CHECK(ocirt::runsc_exec_args({"kill", "id", "9"}) == V{"kill", "id", "9"});
  CHECK(ocirt::runsc_exec_args({"delete", "-f", "id"}) == V{"delete", "--force", "id"});
  CHECK(ocirt::runsc_exec_args({"kill", "-a", "id", "KILL"}) == V{"kill", "--all", "id", "KILL"});
  CHECK(ocirt::runsc_exec_args({"exec", "-d", "-e", "A=1", "id", "ls", "-d"}) ==
        V{"exec", "--detach", "--env", "A=1", "id", "ls", "-d"});
  CHECK_THROWS_AS(ocirt::runsc_exec_args({"exec", "--preserve-fds", "x", "id"}), Error);
}
