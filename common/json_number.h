// Numbers read from JSON that someone else wrote (a request body, a batch
// task file, a trajectory), converted without undefined behaviour.
//
// nlohmann::json keeps a number as int64, uint64 or double, and get<T>()
// converts with a static_cast: a double outside T's range (1e300, or 1e19
// for int64) is undefined behaviour in C++ ([conv.fpint]), and an unsigned
// beyond INT64_MAX wraps to a negative value. Every front end reads
// integers and durations from hostile bodies, so they all read them here.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace sbx::json_number {

/// The value of `v` as an int64: a JSON integer within int64's range, or,
/// when `integral_floats` is true, a number with a fraction or exponent that
/// is a whole number within ±2^53 (Python's and pydantic's `2.0`, `1e3`).
/// nullopt for anything else: a fraction, a value beyond int64, a boolean,
/// a string, null. No throw.
std::optional<int64_t> to_int64(const nlohmann::json& v, bool integral_floats = false) noexcept;

/// The longest duration a request may ask for, in seconds (about 31 years:
/// beyond any sandbox's life, and far inside int64 milliseconds). The
/// front ends' and the batch file's timeouts use it as seconds_to_ms's bound.
inline constexpr double kMaxSeconds = 1e9;

/// `v` (a JSON number of seconds, fractions allowed) as milliseconds,
/// rounded down. nullopt unless it is a number (not a boolean) with
/// 0 <= v <= max_seconds; max_seconds must be at most 9.2e12 (int64 ms).
/// No throw.
std::optional<std::chrono::milliseconds> seconds_to_ms(const nlohmann::json& v, double max_seconds) noexcept;

}  // namespace sbx::json_number
