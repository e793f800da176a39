// The SandboxFusion endpoint's request parsing, paths, languages table and
// metrics (server/sandbox_fusion/): what validation refuses, with which
// FastAPI error, and what the file format accepts.
#include <doctest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "server/sandbox_fusion/languages.h"
#include "server/sandbox_fusion/metrics.h"
#include "server/sandbox_fusion/request.h"

using namespace sbx::server::sandbox_fusion;
using json = nlohmann::json;

namespace {

/// The FastAPI errors of a body that must not validate.
json errors_of(const std::string& body) {
  try {
    parse_run_code(body);
  } catch (const ValidationError& e) {
    return e.detail;
  }
  FAIL("the body validated: " << body);
  return {};
}

}  // namespace

TEST_CASE("sandbox-fusion: verl's reward request parses with SandboxFusion's defaults") {
  auto r = parse_run_code(R"J({"compile_timeout": 10, "run_timeout": 3, "code": "print(1)", "stdin": "x",
                              "language": "python", "files": {}, "fetch_files": []})J");
  CHECK(r.code == "print(1)");
  CHECK(r.language == "python");
  CHECK(r.run_timeout == 3);
  CHECK(r.compile_timeout == 10);
  CHECK(r.memory_limit_mb == -1);
  CHECK(r.stdin_data == std::optional<std::string>("x"));
  auto d = parse_run_code(R"J({"code": "", "language": "bash", "memory_limit_MB": 1024.0, "stdin": null,
                              "files": {"a": null, "b": "aGk="}, "args": ["-q"], "unknown_field": 1})J");
  CHECK(d.run_timeout == 10);
  CHECK(d.memory_limit_mb == 1024);
  CHECK(!d.stdin_data);
  REQUIRE(d.files.size() == 2);
  CHECK(!d.files[0].second);
  CHECK(d.args == std::vector<std::string>{"-q"});
}

TEST_CASE("sandbox-fusion: bodies that do not validate get FastAPI's errors") {
  auto e = errors_of(R"J({"language": "python"})J");
  CHECK(e[0]["type"] == "missing");
  CHECK(e[0]["loc"] == json::array({"body", "code"}));
  e = errors_of(R"J({"code": "x", "language": "cobol"})J");
  CHECK(e[0]["type"] == "literal_error");
  CHECK(e[0]["loc"] == json::array({"body", "language"}));
  e = errors_of(R"J({"code": "x", "language": "python", "run_timeout": "10"})J");
  CHECK(e[0]["loc"] == json::array({"body", "run_timeout"}));
  e = errors_of(R"J({"code": "x", "language": "python", "memory_limit_MB": 1.5})J");
  CHECK(e[0]["type"] == "int_from_float");
  e = errors_of(R"J({"code": "x", "language": "python", "files": {"a": 3}, "fetch_files": [1]})J");
  CHECK(e.size() == 2);
  CHECK(e[0]["loc"] == json::array({"body", "files", "a"}));
  CHECK(e[1]["loc"] == json::array({"body", "fetch_files", 0}));
  e = errors_of(R"J({"code": "x", )J");
  CHECK(e[0]["type"] == "json_invalid");
  e = errors_of(R"J([1, 2])J");
  CHECK(e[0]["type"] == "model_attributes_type");
  CHECK_THROWS_AS(parse_run_jupyter(R"J({"cells": ["a"], "kernel": "julia"})J"), ValidationError);
  CHECK_THROWS_AS(parse_run_jupyter(R"J({"cell_timeout": 1})J"), ValidationError);
  CHECK(parse_run_jupyter(R"J({"cells": ["a", "b"]})J").total_timeout == 45);
}

TEST_CASE("sandbox-fusion: request paths stay in the work dir") {
  CHECK(sandbox_path("/workspace", "a.txt") == "/workspace/a.txt");
  CHECK(sandbox_path("/workspace", "./d//e/../f.txt") == "/workspace/d/f.txt");
  CHECK_THROWS_AS(sandbox_path("/workspace", "../x"), sbx::Error);
  CHECK_THROWS_AS(sandbox_path("/workspace", "a/../../x"), sbx::Error);
  CHECK_THROWS_AS(sandbox_path("/workspace", "/etc/passwd"), sbx::Error);
  CHECK_THROWS_AS(sandbox_path("/workspace", ""), sbx::Error);
  CHECK_THROWS_AS(sandbox_path("/workspace", "a/.."), sbx::Error);
}

TEST_CASE("sandbox-fusion: a languages file over the defaults") {
  auto t = parse_languages(R"J({"python": {"image": "my/python:1"},
                               "bash": {"image": "busybox", "run": ["sh", "main.sh"]},
                               "lua": {"image": "lua", "file": "main.lua", "compile": null, "run": ["lua", "main.lua"]},
                               "cpp": {"compile": null}})J",
                           "test");
  CHECK(t.at("python").image == "my/python:1");
  CHECK(t.at("python").run == default_languages().at("python").run);  // kept
  CHECK(t.at("bash").run == std::vector<std::string>{"sh", "main.sh"});
  CHECK(t.at("lua").file == "main.lua");
  CHECK(!t.at("cpp").compile);
  CHECK(t.at("go").image == default_languages().at("go").image);  // not named: its defaults
  CHECK_THROWS_AS(parse_languages(R"J({"python": {"colour": "x"}})J", "t"), sbx::Error);
  CHECK_THROWS_AS(parse_languages(R"J({"lua": {"image": "lua"}})J", "t"), sbx::Error);  // new: needs file, run
  CHECK_THROWS_AS(parse_languages(R"J({"python": {"file": "../x.py"}})J", "t"), sbx::Error);
  CHECK_THROWS_AS(parse_languages(R"J({"python": {"run": []}})J", "t"), sbx::Error);
  CHECK_THROWS_AS(parse_languages("[]", "t"), sbx::Error);
  CHECK_THROWS_AS(parse_languages("{", "t"), sbx::Error);
}

TEST_CASE("sandbox-fusion: metrics in Prometheus text") {
  Metrics m;
  m.request("run_code", "python", "Success", 0.02);
  m.request("run_code", "python", "Success", 3);
  m.request("run_code", "py\"x", "504", 0.001);
  m.pool_take(true);
  m.pool_take(false);
  auto t = m.text();
  CHECK(t.find("sbx_sandbox_fusion_requests_total{endpoint=\"run_code\",language=\"python\",status=\"Success\"} 2") !=
        std::string::npos);
  CHECK(t.find("language=\"py\\\"x\"") != std::string::npos);  // escaped
  CHECK(t.find("sbx_sandbox_fusion_request_seconds_bucket{endpoint=\"run_code\",le=\"0.025\"} 2") != std::string::npos);
  CHECK(t.find("sbx_sandbox_fusion_request_seconds_bucket{endpoint=\"run_code\",le=\"+Inf\"} 3") != std::string::npos);
  CHECK(t.find("sbx_sandbox_fusion_pool_takes_total{result=\"miss\"} 1") != std::string::npos);
}
