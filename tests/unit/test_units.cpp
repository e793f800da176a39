#include <doctest.h>

#include "common/error.h"
#include "common/units.h"

using namespace sbx;

TEST_CASE("parse_size understands docker's units") {
  CHECK(units::parse_size("256m") == 256ull * 1024 * 1024);
  CHECK(units::parse_size("1g") == 1024ull * 1024 * 1024);
  CHECK(units::parse_size("512K") == 512ull * 1024);
  CHECK(units::parse_size("100") == 100);
  CHECK(units::parse_size("1.5k") == 1536);
  CHECK_THROWS_AS(units::parse_size("lots"), Error);
  CHECK_THROWS_AS(units::parse_size("5x"), Error);
}

TEST_CASE("parse_duration understands s, ms, m, h and bare seconds") {
  using std::chrono::milliseconds;
  CHECK(units::parse_duration("10s") == milliseconds(10000));
  CHECK(units::parse_duration("500ms") == milliseconds(500));
  CHECK(units::parse_duration("1m30s") == milliseconds(90000));
  CHECK(units::parse_duration("2") == milliseconds(2000));
  CHECK(units::parse_duration("1h") == milliseconds(3600000));
  CHECK_THROWS_AS(units::parse_duration("soon"), Error);
  CHECK_THROWS_AS(units::parse_duration("3d"), Error);
}

TEST_CASE("format_size_si gives podman's SI sizes with 3 significant digits") {
  CHECK(units::format_size_si(0) == "0 B");
  CHECK(units::format_size_si(999) == "999 B");
  CHECK(units::format_size_si(1000) == "1.00 kB");
  CHECK(units::format_size_si(5123456) == "5.12 MB");
  CHECK(units::format_size_si(45600000) == "45.6 MB");
  CHECK(units::format_size_si(123456789) == "123 MB");
  CHECK(units::format_size_si(999999999) == "1000 MB");  // not "1e+03"
  CHECK(units::format_size_si(2500000000000ull) == "2.50 TB");
}
