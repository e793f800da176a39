// libFuzzer harness: the bodies of SandboxFusion's POST /run_code and
// /run_jupyter (server/sandbox_fusion/request.h), as verl and other RL
// trainers send them, and the sandbox paths of their `files` and
// `fetch_files`. Any bytes must either parse or be refused with a
// ValidationError (FastAPI's 422 shape: a non-empty list); a path must land
// strictly inside the work dir or be refused with sbx::Error. Another
// exception (a 500), a crash, a leak or undefined behaviour is a finding.
// needs: server/sandbox_fusion/request.h
// sources: server/sandbox_fusion/request.cpp server/sandbox_fusion/languages.cpp
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "server/sandbox_fusion/request.h"

namespace sf = sbx::server::sandbox_fusion;

namespace {

constexpr const char* kWork = "/tmp/sbx-fuzz-work";

// sandbox_path's promise: WORK/a/b with no empty, "." or ".." component.
void check_path(const std::string& p) {
  try {
    const std::string out = sf::sandbox_path(kWork, p);
    const std::string prefix = std::string(kWork) + "/";
    if (out.compare(0, prefix.size(), prefix) != 0 || out.size() == prefix.size()) __builtin_trap();
    const std::string rest = "/" + out.substr(prefix.size()) + "/";
    if (rest.find("/../") != std::string::npos || rest.find("/./") != std::string::npos ||
        rest.find("//") != std::string::npos)
      __builtin_trap();
  } catch (const sbx::Error&) {
  }
}

// One body through one parser: a request whose paths all check, or a
// FastAPI-shaped refusal.
template <class Parse>
void check_body(Parse parse, const std::string& body) {
  try {
    const auto r = parse(body);
    for (const auto& f : r.files) check_path(f.first);
    for (const auto& f : r.fetch_files) check_path(f);
  } catch (const sf::ValidationError& e) {
    if (!e.detail.is_array() || e.detail.empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  check_body(sf::parse_run_code, body);
  check_body(sf::parse_run_jupyter, body);
  return 0;
}
