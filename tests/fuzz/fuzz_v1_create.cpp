// libFuzzer harness: the body of POST /sbx/v1/sandboxes (docs/api.md, the
// SDK's Sandbox.create) translated into the engine's options
// (server/v1/sbx_v1.h v1_create_options). Any JSON a client can send must
// either translate or be refused with V1Error (400, named field) or
// sbx::Error; a JSON type error escaping as another exception (a 500), a
// crash, a leak or undefined behaviour is a finding.
// needs: server/v1/v1_options.cpp
// sources: server/v1/v1_options.cpp
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "server/v1/sbx_v1.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json body = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr,
                                              /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return 0;  // the handler refuses these before (400)
  try {
    sbx::engine::SandboxOptions o = sbx::server::v1_create_options(body);
    if (!o.id.empty()) __builtin_trap();  // the handler gives the id, not the translation
  } catch (const sbx::server::V1Error& e) {
    if (e.status != 400) __builtin_trap();
  } catch (const sbx::Error&) {
  }
  return 0;
}
