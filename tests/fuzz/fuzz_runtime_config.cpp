// libFuzzer harness: OCI runtime-spec config.json -> SandboxSpec
// (oci/runtime_config.h from_runtime_config), then back to config.json.
// A bundle's config.json is untrusted input in the coming runc-compatible
// mode. Rejecting input with sbx::Error is fine; any other exception, crash,
// leak or undefined behaviour is a finding.
// needs: oci/runtime_config.h
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "oci/runtime_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sbx::SandboxSpec spec;
  try {
    spec = sbx::oci::from_runtime_config(text);
  } catch (const sbx::Error&) {
    return 0;
  }
  // What was accepted must render again and parse to the same process args.
  std::string again;
  try {
    again = sbx::oci::to_runtime_config(spec);
  } catch (const sbx::Error&) {
    return 0;  // e.g. empty process.args: refused on the way out, documented
  }
  sbx::SandboxSpec spec2 = sbx::oci::from_runtime_config(again);
  if (spec2.process.args != spec.process.args || spec2.hostname != spec.hostname ||
      spec2.mounts.size() != spec.mounts.size())
    __builtin_trap();
  return 0;
}
