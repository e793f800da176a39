// Signal names and numbers (signal(7)), as kill(1), docker kill, runc kill
// and the Docker API's ?signal= take them. One table for sbx and sbx-runc.
#pragma once
#include <string>

namespace sbx::runtime {

/// "TERM", "SIGTERM", "sigterm", "15" → 15; the aliases IOT, CLD, POLL;
/// "RTMIN", "RTMIN+3", "SIGRTMAX-1" → the real-time signals. Numbers 1 to
/// SIGRTMAX. Throws sbx::Error (EINVAL) naming the text on anything else
/// (0, an empty string, an unknown name).
int parse_signal(const std::string& text);

}  // namespace sbx::runtime
