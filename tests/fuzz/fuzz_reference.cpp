// libFuzzer harness: image references and names as users type them
// (oci/reference.h) and digests (oci/digest.h). Only sbx::Error may escape;
// what parses must print back to something that parses to the same thing.
// needs: oci/reference.h
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "oci/digest.h"
#include "oci/reference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    sbx::oci::Reference r = sbx::oci::parse_reference(text);
    // A name or name@digest prints to text that parses back to the same
    // reference (str() of an id is its bare hex, which reads as a name or id
    // prefix by design, so ids are not compared).
    if (r.kind != sbx::oci::Reference::Kind::Id) {
      std::string again = r.str();
      sbx::oci::Reference r2 = sbx::oci::parse_reference(again);
      if (r2.str() != again || r2.kind != r.kind || r2.repository != r.repository) __builtin_trap();
    }
  } catch (const sbx::Error&) {
  }
  try {
    std::string n = sbx::oci::normalize_name(text);
    if (sbx::oci::normalize_name(n) != n) __builtin_trap();
  } catch (const sbx::Error&) {
  }
  try {
    std::string hex = sbx::oci::digest_hex(text);
    if (!sbx::oci::is_sha256_hex(hex)) __builtin_trap();
  } catch (const sbx::Error&) {
  }
  (void)sbx::oci::normalize_repository(text);
  return 0;
}
