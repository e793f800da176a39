// Logging for the library and CLI: a thin front over spdlog, so that only one
// translation unit pays for spdlog's headers. Logs go to stderr, never stdout.
#pragma once
#include <string>

namespace sbx::log {

enum class Level { trace, debug, info, warn, error, off };

/// Sets the level from "trace|debug|info|warn|error|off". Throws sbx::Error on
/// an unknown name.
void set_level(const std::string& name);
Level level();

void trace(const std::string& msg);
void debug(const std::string& msg);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);

inline bool enabled(Level l) { return l >= level(); }

}  // namespace sbx::log
