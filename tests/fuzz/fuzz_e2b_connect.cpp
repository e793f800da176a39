// libFuzzer harness: what E2B's SDK sends the sandbox endpoint before any
// handler sees it (server/e2b/e2b.h): a Connect server-stream request body
// (one envelope: flags byte, 4-byte big-endian length, JSON message) and the
// base64 of protobuf `bytes` fields (process input, file contents). Any bytes
// must either decode or be refused with ConnectError; base64 must round-trip
// what sbx itself encodes. Another exception (a 500), a crash, a leak or
// undefined behaviour is a finding.
// needs: server/e2b/e2b.h
// sources: server/e2b/e2b_connect.cpp server/framing.cpp
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/e2b/e2b.h"

namespace server = sbx::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  try {
    nlohmann::json msg = server::connect_stream_request(body);
    // What the server answers with must frame again (an end-of-stream too).
    if (server::connect_envelope(0, msg.dump()).size() < 5) __builtin_trap();
  } catch (const server::ConnectError& e) {
    if (e.code.empty() || server::connect_http_status(e.code) < 400) __builtin_trap();
  }
  try {
    (void)server::base64_decode(body);
  } catch (const server::ConnectError& e) {
    if (e.code != "invalid_argument") __builtin_trap();
  }
  if (server::base64_decode(server::base64_encode(body)) != body) __builtin_trap();
  return 0;
}
