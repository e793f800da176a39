// Small string helpers that several layers need.
#pragma once
#include <string>
#include <vector>

namespace sbx {

/// `s` cut at every `sep`, empty fields kept: "a::b" gives a, "", b; "" gives
/// one empty field (unlike std::getline, which drops a trailing empty one).
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(sep, start);
    out.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) return out;
    start = c + 1;
  }
}

}  // namespace sbx
