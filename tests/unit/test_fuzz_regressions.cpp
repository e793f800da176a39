// Every input that made a fuzzer (tests/fuzz/) crash, hang or trip a
// sanitizer, reduced to a unit test next to the fix. The test names say which
// fuzzer found it.
#include <doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "oci/reference.h"
#include "oci/runtime_config.h"
#include "oci/store.h"
#include "server/docker/docker_spec.h"
#include "server/sandbox_fusion/request.h"

using namespace sbx;

namespace {
// A minimal valid config.json with one field replaced by `field_json`.
std::string config_with(const std::string& process_user, const std::string& linux_extra = "",
                        const std::string& annotations = "{}") {
  return R"({"ociVersion":"1.0.2","process":{"args":["/bin/true"],"cwd":"/","user":)" + process_user +
         R"(},"root":{"path":"rootfs"},"annotations":)" + annotations + R"(,"linux":{)" + linux_extra + "}}";
}
}  // namespace

TEST_CASE("fuzz_runtime_config: a negative host id in gidMappings is an error, not undefined behaviour") {
  // The fuzzer's input had "hostID":-10.000; nlohmann's get<uint32_t>() cast it.
  std::string j = config_with(R"({"uid":0,"gid":0})",
                              R"("gidMappings":[{"containerID":0,"hostID":-10.000,"size":65536}])");
  CHECK_THROWS_AS(oci::from_runtime_config(j), Error);
  j = config_with(R"({"uid":0,"gid":0})", R"("uidMappings":[{"containerID":0,"hostID":-10,"size":65536}])");
  CHECK_THROWS_AS(oci::from_runtime_config(j), Error);
}

TEST_CASE("fuzz_runtime_config: uid 2^32 does not wrap to root") {
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":4294967296,"gid":0})")), Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":-1})")), Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":1.5e300,"gid":0})")), Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":0,"additionalGids":[-5]})")), Error);
  // In range still works.
  SandboxSpec s = oci::from_runtime_config(config_with(R"({"uid":4294967295,"gid":1000,"additionalGids":[27]})"));
  CHECK(s.process.uid == 4294967295u);
  CHECK(s.process.gid == 1000u);
  CHECK(s.process.additional_gids == std::vector<uint32_t>{27});
}

TEST_CASE("fuzz_runtime_config: negative rlimits, bad resources and bad timeouts are sbx errors") {
  std::string j = R"({"process":{"args":["x"],"rlimits":[{"type":"RLIMIT_NOFILE","soft":-1,"hard":10}]}})";
  CHECK_THROWS_AS(oci::from_runtime_config(j), Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":0})",
                                                       R"("resources":{"cpu":{"quota":1000,"period":0}})")),
                  Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":0})",
                                                       R"("resources":{"memory":{"limit":1e300}})")),
                  Error);
  // std::stoll threw std::invalid_argument / out_of_range here, which no caller expects.
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":0})", "",
                                                       R"({"org.sbx.timeout-ms":"soon"})")),
                  Error);
  CHECK_THROWS_AS(oci::from_runtime_config(config_with(R"({"uid":0,"gid":0})", "",
                                                       R"({"org.sbx.timeout-ms":"99999999999999999999999"})")),
                  Error);
  SandboxSpec s = oci::from_runtime_config(config_with(R"({"uid":0,"gid":0})", "", R"({"org.sbx.timeout-ms":"1500"})"));
  CHECK(s.timeout.count() == 1500);
}

TEST_CASE("fuzz_reference: a normalised name is its own normal form") {
  // Found: "docker.io/library/docker.io/library/bbsuay00o" normalised to
  // "docker.io/library/bbsuay00o:latest", which normalises to "bbsuay00o:latest".
  std::string n = oci::normalize_name("docker.io/library/docker.io/library/bbsuay00o");
  CHECK(n == oci::normalize_name(n));
  CHECK(n == "bbsuay00o:latest");
  CHECK(oci::normalize_name("localhost/docker.io/library/x:1") == "x:1");
  CHECK(oci::normalize_repository("docker.io/library/") == "docker.io/library/");
}

TEST_CASE("fuzz_reference: a repository named sha256 is refused (it would print as an image id)") {
  CHECK_THROWS_AS(oci::parse_reference("index.docker.io/library/sha256:f1aea65783"), Error);
  CHECK_THROWS_AS(oci::normalize_name("sha256:latest"), Error);
  CHECK(oci::parse_reference("sha256:f1aea65783").kind == oci::Reference::Kind::Id);
  CHECK(oci::normalize_name("sha256x/app") == "sha256x/app:latest");
}

TEST_CASE("fuzz_image_json: a number out of range in index.json is an sbx error, not an escaping json exception") {
  char tmpl[] = "/tmp/sbx-fuzz-regress.XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  std::string t = tmpl;
  std::filesystem::create_directories(t + "/img/blobs/sha256");
  std::ofstream(t + "/img/oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
  std::ofstream(t + "/img/index.json") << R"({"schemaVersion":2,"manifests":[{"size":1e400}]})";
  oci::Store store(t + "/store");
  CHECK_THROWS_AS(store.import(t + "/img"), Error);
  std::filesystem::remove_all(t);
}

TEST_CASE("fuzz_docker_create: a fractional or huge number in an integer field is a 400, not undefined behaviour") {
  // Found by fuzz_docker_create: "NanoCpus": 1.5e32 reached json's
  // double-to-int64 conversion (UBSan: outside the range of 'long').
  for (const char* bad : {R"({"NanoCpus": 150000000222222222222222222222220})", R"({"Memory": 1.5})",
                          R"({"PidsLimit": 18446744073709551615})",
                          R"({"Mounts": [{"Type": "tmpfs", "Target": "/t", "TmpfsOptions": {"SizeBytes": 1e300}}]})"}) {
    nlohmann::json cfg = {{"Image", "busybox"}, {"HostConfig", nlohmann::json::parse(bad)}};
    try {
      server::options_from_docker(cfg, std::string(64, 'a'), "n");
      FAIL("accepted: " << bad);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidArgument);
      CHECK(std::string(e.what()).find("64-bit integer") != std::string::npos);
    }
  }
  nlohmann::json ok = {{"Image", "busybox"}, {"HostConfig", {{"NanoCpus", 1500000000}, {"Memory", 268435456}}}};
  auto o = server::options_from_docker(ok, std::string(64, 'a'), "n");
  CHECK(o.memory_bytes == 268435456);
}

TEST_CASE("fuzz_sandbox_fusion: a number beyond a double is FastAPI's json_invalid (422), not a 500") {
  // Found by fuzz_sandbox_fusion: json throws out_of_range (not parse_error)
  // for 1e315, which escaped the body parser.
  for (const char* body : {R"({"code": "", "language": "python", "run_timeout": 1e315})",
                           R"({"cells": [], "x": -1e400})"}) {
    try {
      (void)server::sandbox_fusion::parse_run_code(body);
      FAIL("accepted: " << body);
    } catch (const server::sandbox_fusion::ValidationError& e) {
      REQUIRE(e.detail.size() == 1);
      CHECK(e.detail[0]["type"] == "json_invalid");
    }
  }
}
