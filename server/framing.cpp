// Frames of sbx serve's streams (server/framing.h).
#include "server/framing.h"

namespace sbx::server {

namespace {

/// `header_size` bytes — `first`, zeros, the big-endian 32-bit length of
/// `payload` in the last four — then `payload`.
std::string framed(size_t header_size, uint8_t first, std::string_view payload) {
  std::string out(header_size, '\0');
  out[0] = static_cast<char>(first);
  uint32_t n = static_cast<uint32_t>(payload.size());
  for (size_t i = 0; i < 4; ++i) out[header_size - 1 - i] = static_cast<char>(n >> (8 * i));
  out.append(payload);
  return out;
}

}  // namespace

std::string docker_frame(int stream, std::string_view data) { return framed(8, static_cast<uint8_t>(stream), data); }

std::string prefixed_frame(uint8_t head, std::string_view payload) { return framed(5, head, payload); }

std::optional<PrefixedFrame> parse_prefixed_frame(std::string_view buf) {
  if (buf.size() < 5) return std::nullopt;
  auto b = reinterpret_cast<const unsigned char*>(buf.data());
  uint32_t n = (uint32_t{b[1]} << 24) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 8) | uint32_t{b[4]};
  if (buf.size() - 5 < n) return std::nullopt;
  return PrefixedFrame{b[0], buf.substr(5, n), size_t{5} + n};
}

}  // namespace sbx::server
