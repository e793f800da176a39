// Parsing of human units on the command line: sizes ("256m", "1g", "512k",
// bytes) and durations ("10s", "1m30s", "500ms", "2h"; a bare number is seconds).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace sbx::units {

/// "256m" -> 268435456. Suffixes b,k,m,g,t (any case, optional trailing "b"/"ib"),
/// powers of 1024 as docker. Throws sbx::Error on junk, naming the flag `what`.
uint64_t parse_size(const std::string& text, const std::string& what = "size");

/// "1m30s" -> 90000 ms. Units ms, s, m, h; a bare number means seconds.
/// Throws sbx::Error on junk or a negative value.
std::chrono::milliseconds parse_duration(const std::string& text, const std::string& what = "duration");

/// 1536 -> "1.5 KiB".
std::string format_size(uint64_t bytes);

/// Sizes as podman's `images` shows them: SI units (1000), 3 significant
/// digits: 5123456 -> "5.12 MB", 999 -> "999 B", 123456789 -> "123 MB".
std::string format_size_si(uint64_t bytes);

}  // namespace sbx::units
