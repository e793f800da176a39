// runtime/linux/mountinfo.h: proc(5)'s mountinfo lines.
#include <doctest.h>
#include "runtime/linux/mountinfo.h"

using namespace sbx::runtime;

TEST_CASE("parse_mountinfo: fields, optional fields, escapes, malformed lines") {
  const std::string text =
      "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n"
      "garbage\n"
      "40 36 0:52 / / rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w\n"
      "41 40 0:53 / /proc rw,nosuid - proc proc rw\n";
  auto m = parse_mountinfo(text);
  REQUIRE(m.size() == 3);
  CHECK(m[0].id == 36);
  CHECK(m[0].parent == 35);
  CHECK(m[0].dev == "98:0");
  CHECK(m[0].root == "/mnt1");
  CHECK(m[0].point == "/mnt/with space");
  CHECK(m[0].fstype == "ext3");
  CHECK(m[0].source == "/dev/root");
  CHECK(m[0].super_options == "rw,errors=continue");
  CHECK(m[1].point == "/");
  CHECK(m[1].fstype == "overlay");
  CHECK(m[1].super_options == "rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w");
  CHECK(m[2].point == "/proc");
}

TEST_CASE("read_mountinfo: this process sees a root mount") {
  auto m = read_mountinfo(0);
  REQUIRE_FALSE(m.empty());
  bool root = false;
  for (const auto& l : m) root = root || l.point == "/";
  CHECK(root);
}
