// The only file that includes spdlog (header-only, with fmt header-only), so
// the static build needs no libspdlog.a and the rest of the build stays fast.
#define SPDLOG_HEADER_ONLY
#define FMT_HEADER_ONLY
#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/error.h"

namespace sbx::log {
namespace {
Level g_level = Level::warn;

spdlog::logger& logger() {
  static auto l = [] {
    auto lg = spdlog::stderr_color_st("sbx");
    lg->set_pattern("sbx: %^%l%$: %v");
    lg->set_level(spdlog::level::trace);
    return lg;
  }();
  return *l;
}
}  // namespace

void set_level(const std::string& name) {
  static const std::pair<const char*, Level> names[] = {
      {"trace", Level::trace}, {"debug", Level::debug}, {"info", Level::info},
      {"warn", Level::warn},   {"warning", Level::warn}, {"error", Level::error},
      {"off", Level::off}};
  for (auto& [n, l] : names) {
    if (name == n) {
      g_level = l;
      return;
    }
  }
  throw Error("unknown log level '" + name + "': use trace, debug, info, warn, error or off");
}

Level level() { return g_level; }

void trace(const std::string& m) { if (enabled(Level::trace)) logger().trace(m); }
void debug(const std::string& m) { if (enabled(Level::debug)) logger().debug(m); }
void info(const std::string& m) { if (enabled(Level::info)) logger().info(m); }
void warn(const std::string& m) { if (enabled(Level::warn)) logger().warn(m); }
void error(const std::string& m) { if (enabled(Level::error)) logger().error(m); }

}  // namespace sbx::log
