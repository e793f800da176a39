// libFuzzer harness: the body of the Docker API's POST /containers/create
// (Config with HostConfig and NetworkingConfig), as a client sends it to
// `sbx serve`, translated into the engine's options
// (server/docker/docker_spec.h options_from_docker, gpus_from_docker,
// userns_mode_from_docker). Any JSON a client can send must either translate
// or be refused with sbx::Error (the server answers 400); a JSON type error
// escaping as another exception (a 500), a crash, a leak or undefined
// behaviour is a finding.
// needs: server/docker/docker_spec.h
// sources: server/docker/docker_spec.cpp
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "server/docker/docker_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json cfg = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr,
                                             /*allow_exceptions=*/false);
  if (cfg.is_discarded()) return 0;  // not JSON: the server's parse answers 400 first
  try {
    sbx::engine::SandboxOptions o = sbx::server::options_from_docker(cfg, std::string(64, 'a'), "fuzz");
    // What was accepted is in the options' own terms: strings as given.
    if (o.id != std::string(64, 'a')) __builtin_trap();
  } catch (const sbx::Error&) {
  }
  try {
    (void)sbx::server::gpus_from_docker(cfg);
  } catch (const sbx::Error&) {
  }
  try {
    (void)sbx::server::userns_mode_from_docker(cfg);
  } catch (const sbx::Error&) {
  }
  return 0;
}
