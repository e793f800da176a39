#include <doctest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "oci/runtime_config.h"

using namespace sbx;

static SandboxSpec sample_spec() {
  SandboxSpec s;
  s.id = std::string(64, 'a');
  s.name = "demo";
  s.image_ref = "python:latest";
  s.image_id = std::string(64, 'b');
  s.process.args = {"python3", "-c", "print(1)"};
  s.process.env = {"PATH=/usr/bin:/bin", "HOME=/root"};
  s.process.cwd = "/work";
  s.process.uid = 1000;
  s.process.gid = 1000;
  s.process.additional_gids = {27};
  s.process.terminal = true;
  s.process.rlimits = {{"RLIMIT_NOFILE", 1024, 2048}};
  s.process.capabilities = default_capabilities();
  s.hostname = "box";
  s.readonly_rootfs = true;
  s.mounts = {{"/data", "bind", "/srv/data", {"rbind", "ro"}}, {"/tmp", "tmpfs", "tmpfs", {"size=64m"}}};
  s.devices = {{"/dev/nvidia0", 'c', 195, 0, 0666, 0, 0, ""}};
  s.resources.memory_bytes = 256 << 20;
  s.resources.cpus = 1.5;
  s.resources.pids_limit = 1024;
  s.resources.devices = {{true, 'c', 195, 0, "rwm"}};
  s.network = NetworkMode::None;
  s.uid_mappings = {{0, 100000, 65536}};
  s.gid_mappings = {{0, 100000, 65536}};
  s.create_container_hooks = {{"/usr/bin/hook", {"hook", "x"}, {"A=1"}, 5}};
  s.labels = {{"team", "rl"}};
  s.annotations = {{"com.example/x", "y"}};
  s.timeout = std::chrono::milliseconds(10000);
  s.disk_bytes = uint64_t{32} << 20;
  return s;
}

TEST_CASE("config.json written from a SandboxSpec follows runtime-spec field names") {
  SandboxSpec s = sample_spec();
  auto j = nlohmann::json::parse(oci::to_runtime_config(s, {"rootfs", "/sbx/x", true, ""}));
  CHECK(j["ociVersion"] == "1.0.2");
  CHECK(j["process"]["args"][2] == "print(1)");
  CHECK(j["process"]["user"]["uid"] == 1000);
  CHECK(j["process"]["cwd"] == "/work");
  CHECK(j["process"]["rlimits"][0]["type"] == "RLIMIT_NOFILE");
  CHECK(j["process"]["capabilities"]["bounding"].size() == default_capabilities().size());
  CHECK(j["root"]["readonly"] == true);
  CHECK(j["hostname"] == "box");
  CHECK(j["linux"]["resources"]["memory"]["limit"] == 256 << 20);
  CHECK(j["linux"]["resources"]["cpu"]["quota"] == 150000);
  CHECK(j["linux"]["resources"]["pids"]["limit"] == 1024);
  CHECK(j["linux"]["cgroupsPath"] == "/sbx/x");
  CHECK(j["linux"]["maskedPaths"].size() > 5);
  bool has_netns = false;
  for (auto& n : j["linux"]["namespaces"]) has_netns |= n["type"] == "network";
  CHECK(has_netns);
  CHECK(j["annotations"]["org.sbx.label.team"] == "rl");
  CHECK(j["annotations"]["org.sbx.disk-bytes"] == "33554432");
  CHECK(j["mounts"].size() == 6 + 2);  // runc's defaults, then the sandbox's own
}

TEST_CASE("config.json round-trips through SandboxSpec") {
  SandboxSpec s = sample_spec();
  SandboxSpec r = oci::from_runtime_config(oci::to_runtime_config(s));
  CHECK(r.process.args == s.process.args);
  CHECK(r.process.env == s.process.env);
  CHECK(r.process.cwd == s.process.cwd);
  CHECK(r.process.uid == s.process.uid);
  CHECK(r.process.additional_gids == s.process.additional_gids);
  CHECK(r.process.terminal == s.process.terminal);
  CHECK(r.process.rlimits.size() == 1);
  CHECK(r.process.rlimits[0].hard == 2048);
  CHECK(r.process.capabilities == s.process.capabilities);
  CHECK(r.hostname == s.hostname);
  CHECK(r.readonly_rootfs);
  REQUIRE(r.mounts.size() == 2);
  CHECK(r.mounts[0].source == "/srv/data");
  CHECK(r.mounts[1].options == std::vector<std::string>{"size=64m"});
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].major == 195);
  CHECK(*r.resources.memory_bytes == *s.resources.memory_bytes);
  CHECK(*r.resources.cpus == doctest::Approx(1.5));
  CHECK(*r.resources.pids_limit == 1024);
  REQUIRE(r.resources.devices.size() == 1);
  CHECK(r.resources.devices[0].allow);
  CHECK(r.network == NetworkMode::None);
  CHECK(r.uid_mappings.size() == 1);
  CHECK(r.uid_mappings[0].host_id == 100000);
  REQUIRE(r.create_container_hooks.size() == 1);
  CHECK(r.create_container_hooks[0].timeout_s == 5);
  CHECK(r.labels == s.labels);
  CHECK(r.annotations == s.annotations);
  CHECK(r.image_ref == s.image_ref);
  CHECK(r.name == "demo");
  CHECK(r.timeout == s.timeout);
  CHECK(r.disk_bytes == s.disk_bytes);
}

TEST_CASE("config.json: a malformed org.sbx.disk-bytes is refused") {
  auto j = nlohmann::json::parse(oci::to_runtime_config(sample_spec()));
  for (const char* bad : {"", "12m", "-1", "99999999999999999999999"}) {
    j["annotations"]["org.sbx.disk-bytes"] = bad;
    CHECK_THROWS_WITH_AS(oci::from_runtime_config(j.dump()), doctest::Contains("disk-bytes"), Error);
  }
}

TEST_CASE("host network: no network namespace in config.json") {
  SandboxSpec s = sample_spec();
  s.network = NetworkMode::Host;
  auto j = nlohmann::json::parse(oci::to_runtime_config(s));
  for (auto& n : j["linux"]["namespaces"]) CHECK(n["type"] != "network");
  CHECK(oci::from_runtime_config(j.dump()).network == NetworkMode::Host);
}

TEST_CASE("malformed config.json gives a clear error") {
  CHECK_THROWS_WITH_AS(oci::from_runtime_config("not json"), doctest::Contains("not a JSON object"), Error);
  CHECK_THROWS_WITH_AS(oci::from_runtime_config(R"({"process":{"args":"x"}})"), doctest::Contains("process.args"), Error);
  CHECK_THROWS_AS(oci::from_runtime_config(R"({"process":{"args":[]}})"), Error);
  SandboxSpec empty;
  CHECK_THROWS_AS(oci::to_runtime_config(empty), Error);
}

TEST_CASE("config.json: a network namespace the caller made is named by path (gVisor --network private)") {
  SandboxSpec s = sample_spec();
  s.network = NetworkMode::Private;
  oci::RuntimeConfigOptions o;
  o.network_namespace_path = "/proc/42/fd/7";
  auto j = nlohmann::json::parse(oci::to_runtime_config(s, o));
  int found = 0;
  for (const auto& n : j["linux"]["namespaces"])
    if (n["type"] == "network") {
      ++found;
      CHECK(n.value("path", "") == "/proc/42/fd/7");
    }
  CHECK(found == 1);
  // Without a path: a new, empty namespace (none), and none with host.
  auto k = nlohmann::json::parse(oci::to_runtime_config(sample_spec(), {}));
  for (const auto& n : k["linux"]["namespaces"]) CHECK_FALSE(n.contains("path"));
}
