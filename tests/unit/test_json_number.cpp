// common/json_number.h: integers and durations from hostile JSON, converted
// without undefined behaviour (these values reached a double-to-integer
// conversion outside its range before; UBSan in CI's ASan run catches one).
#include <doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>

#include "common/json_number.h"

using namespace sbx;
using nlohmann::json;

TEST_CASE("json_number::to_int64: integers within int64, nothing else") {
  CHECK(json_number::to_int64(json::parse("0")) == 0);
  CHECK(json_number::to_int64(json::parse("-5")) == -5);
  CHECK(json_number::to_int64(json::parse("9223372036854775807")) == INT64_MAX);
  CHECK(json_number::to_int64(json::parse("-9223372036854775808")) == INT64_MIN);
  // An unsigned beyond INT64_MAX used to wrap to a negative value.
  CHECK_FALSE(json_number::to_int64(json::parse("9223372036854775808")));
  CHECK_FALSE(json_number::to_int64(json::parse("18446744073709551615")));
  CHECK_FALSE(json_number::to_int64(json::parse("1.5")));
  CHECK_FALSE(json_number::to_int64(json::parse("2.0")));  // a float unless asked for
  CHECK_FALSE(json_number::to_int64(json::parse("1e300")));
  CHECK_FALSE(json_number::to_int64(json::parse("true")));
  CHECK_FALSE(json_number::to_int64(json::parse("\"7\"")));
  CHECK_FALSE(json_number::to_int64(json::parse("null")));
}

TEST_CASE("json_number::to_int64 with integral floats: whole numbers within 2^53") {
  CHECK(json_number::to_int64(json::parse("2.0"), true) == 2);
  CHECK(json_number::to_int64(json::parse("-1e3"), true) == -1000);
  CHECK(json_number::to_int64(json::parse("9007199254740992.0"), true) == 9007199254740992);
  CHECK(json_number::to_int64(json::parse("7"), true) == 7);
  CHECK_FALSE(json_number::to_int64(json::parse("2.5"), true));
  CHECK_FALSE(json_number::to_int64(json::parse("1e19"), true));
  CHECK_FALSE(json_number::to_int64(json::parse("-1e300"), true));
}

TEST_CASE("json_number::seconds_to_ms: 0..max seconds, fractions rounded down") {
  CHECK(json_number::seconds_to_ms(json::parse("1.5"), 10)->count() == 1500);
  CHECK(json_number::seconds_to_ms(json::parse("0"), 10)->count() == 0);
  CHECK(json_number::seconds_to_ms(json::parse("10"), 10)->count() == 10000);
  CHECK(json_number::seconds_to_ms(json::parse("0.0009"), 10)->count() == 0);
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("10.001"), 10));
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("-0.5"), 10));
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("1e300"), 1e9));
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("-1e300"), 1e9));
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("true"), 10));
  CHECK_FALSE(json_number::seconds_to_ms(json::parse("\"5\""), 10));
  CHECK(json_number::seconds_to_ms(json::parse("1e9"), 1e9)->count() == 1000000000000);
}
