#include "common/json_number.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace sbx::json_number {

std::optional<int64_t> to_int64(const nlohmann::json& v, bool integral_floats) noexcept {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && integral_floats) {
    const double d = v.get<double>();
    // 2^53: beyond it a double no longer holds every integer, and the
    // comparison keeps the conversion below inside int64's range.
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 9007199254740992.0)
      return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> seconds_to_ms(const nlohmann::json& v, double max_seconds) noexcept {
  if (!v.is_number()) return std::nullopt;  // is_number() is false for booleans
  const double s = v.get<double>();
  // Range-checked as a double before any conversion (NaN fails both tests).
  if (!(s >= 0 && s <= max_seconds)) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

}  // namespace sbx::json_number
