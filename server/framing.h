// The length-prefixed frames of sbx serve's streams, one writer and one
// reader for every API: Docker's multiplexed stdout/stderr stream (attach,
// exec start, logs), and the 5-byte frames that /sbx/v1's exec stream
// (docs/api.md "Exec stream") and Connect's envelopes (E2B's envd,
// connectrpc.com/docs/protocol "Streaming") share: one byte, a big-endian
// 32-bit length, the payload.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sbx::server {

/// One frame of Docker's multiplexed stream: stream (1 stdout, 2 stderr),
/// three zero bytes, the big-endian 32-bit length of `data`, then `data`
/// (Docker Engine API, "Attach to a container": stream format).
std::string docker_frame(int stream, std::string_view data);

/// A 5-byte-header frame: `head` (an /sbx/v1 frame's kind, a Connect
/// envelope's flags), the big-endian 32-bit length of `payload`, `payload`.
std::string prefixed_frame(uint8_t head, std::string_view payload);

/// The first whole 5-byte-header frame at the start of `buf`: its head byte,
/// its payload (a view into `buf`) and its size in bytes with the header.
struct PrefixedFrame {
  uint8_t head = 0;
  std::string_view payload;
  size_t size = 0;
};
/// nullopt while `buf` holds less than one whole frame.
std::optional<PrefixedFrame> parse_prefixed_frame(std::string_view buf);

}  // namespace sbx::server
