// The Connect protocol's framing for the E2B endpoint (server/e2b/e2b.h):
// https://connectrpc.com/docs/protocol — unary calls are plain JSON
// request/response bodies with errors as {"code","message"} and an HTTP
// status; server streams (application/connect+json) are envelopes of one
// flags byte, a 4-byte big-endian length and the JSON message, ending with
// an end-of-stream envelope (flags 0x02). Protobuf JSON writes bytes as
// base64 (https://protobuf.dev/programming-guides/json/).
#include <map>

#include "server/e2b/e2b.h"
#include "server/framing.h"

namespace sbx::server {

using nlohmann::json;

int connect_http_status(const std::string& code) {
  static const std::map<std::string, int> kStatus = {
      {"canceled", 499},          {"unknown", 500},           {"invalid_argument", 400},
      {"deadline_exceeded", 504}, {"not_found", 404},         {"already_exists", 409},
      {"permission_denied", 403}, {"resource_exhausted", 429}, {"failed_precondition", 400},
      {"aborted", 409},           {"out_of_range", 400},      {"unimplemented", 501},
      {"internal", 500},          {"unavailable", 503},       {"data_loss", 500},
      {"unauthenticated", 401}};
  auto it = kStatus.find(code);
  return it == kStatus.end() ? 500 : it->second;
}

std::string connect_envelope(uint8_t flags, std::string_view payload) { return prefixed_frame(flags, payload); }

json connect_stream_request(const std::string& body) {
  auto env = parse_prefixed_frame(body);
  if (!env) throw ConnectError{"invalid_argument", body.size() < 5 ? "streaming request: no envelope" : "streaming request: short envelope"};
  if (env->head & 0x01) throw ConnectError{"internal", "compressed envelopes are not supported"};
  try {
    return json::parse(env->payload.begin(), env->payload.end());
  } catch (const json::exception& e) {
    throw ConnectError{"invalid_argument", std::string("malformed JSON message: ") + e.what()};
  }
}

std::string connect_end_stream(const std::optional<ConnectError>& err) {
  json end = json::object();
  if (err) end["error"] = {{"code", err->code}, {"message", err->message}};
  return connect_envelope(0x02, end.dump());
}

std::string base64_encode(std::string_view d) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((d.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < d.size(); i += 3) {
    uint32_t v = (uint32_t{static_cast<unsigned char>(d[i])} << 16) |
                 (uint32_t{static_cast<unsigned char>(d[i + 1])} << 8) | static_cast<unsigned char>(d[i + 2]);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i < d.size()) {
    uint32_t v = uint32_t{static_cast<unsigned char>(d[i])} << 16;
    if (i + 1 < d.size()) v |= uint32_t{static_cast<unsigned char>(d[i + 1])} << 8;
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += i + 1 < d.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view t) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : t) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+' || ch == '-') v = 62;
    else if (ch == '/' || ch == '_') v = 63;
    else if (ch == '=') break;
    else throw ConnectError{"invalid_argument", "malformed base64 in a bytes field"};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace sbx::server
