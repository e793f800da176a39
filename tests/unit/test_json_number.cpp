// common/json_number.h: integers and durations from hostile JSON, converted
// without undefined behaviour (these values reached a double-to-integer
// conversion outside its range before; UBSan in CI's ASan run catches one).
#include <doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>

#include "common/error.h"
#include "common/json_number.h"
#include "engine/batch.h"
#include "server/v1/sbx_v1.h"

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

TEST_CASE("json_number's callers: /sbx/v1 create bodies and batch task lines refuse huge or fractional numbers") {
  // Before json_number, cpu * 1e9, timeout * 1000 and pids_limit reached a
  // double-to-integer conversion out of range (fuzz_docker_create's class).
  for (const char* bad : {R"({"image":"busybox","cpu":1e300})", R"({"image":"busybox","timeout":1e300})",
                          R"({"image":"busybox","idle_timeout":-1})", R"({"image":"busybox","timeout":1000000001})",
                          R"({"image":"busybox","memory":1.5})",
                          R"({"image":"busybox","memory":18446744073709551615})"}) {
    try {
      server::v1_create_options(nlohmann::json::parse(bad));
      FAIL("accepted: " << bad);
    } catch (const server::V1Error& e) {
      CHECK(e.status == 400);
    }
  }
  auto o = server::v1_create_options(nlohmann::json::parse(R"({"image":"busybox","cpu":1.5,"timeout":2.5})"));
  CHECK(o.cpus == doctest::Approx(1.5));
  CHECK(o.timeout.count() == 2500);

  engine::SandboxOptions base;
  base.image = "busybox";
  for (const char* bad : {R"({"id":"a","cmd":["x"],"timeout":1e300})", R"({"id":"a","cmd":["x"],"pids_limit":1e300})",
                          R"({"id":"a","cmd":["x"],"pids_limit":2.5})", R"({"id":"a","cmd":["x"],"memory":1e300})",
                          R"({"id":1e300,"cmd":["x"]})"})
    CHECK_THROWS_AS(engine::batch_task_options(base, bad), Error);
  auto t = engine::batch_task_options(base, R"({"id":7,"cmd":["x"],"timeout":1.5,"pids_limit":64,"memory":"1m"})");
  CHECK(t.pids_limit == 64);
  CHECK(t.memory_bytes == 1048576);
  CHECK(t.timeout.count() == 1500);
}
