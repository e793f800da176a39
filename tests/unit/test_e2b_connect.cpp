// The E2B endpoint's pure parts (server/e2b/e2b_connect.cpp): the Connect
// protocol's envelopes and error statuses, and protobuf JSON's base64.
#include <doctest.h>

#include "server/e2b/e2b.h"

using namespace sbx;
using nlohmann::json;

TEST_CASE("connect_envelope: a flags byte, a big-endian 32-bit length, the payload") {
  std::string e = server::connect_envelope(0, "{}");
  REQUIRE(e.size() == 7);
  CHECK(e[0] == 0);
  CHECK(e.substr(1, 4) == std::string("\0\0\0\2", 4));
  CHECK(e.substr(5) == "{}");
  std::string big = server::connect_envelope(2, std::string(0x010203, 'x'));
  CHECK(static_cast<unsigned char>(big[0]) == 2);
  CHECK(static_cast<unsigned char>(big[2]) == 0x01);
  CHECK(static_cast<unsigned char>(big[3]) == 0x02);
  CHECK(static_cast<unsigned char>(big[4]) == 0x03);
}

TEST_CASE("connect_stream_request reads the first envelope's JSON, refuses short and compressed ones") {
  json in = {{"process", {{"cmd", "/bin/sh"}}}, {"stdin", true}};
  json got = server::connect_stream_request(server::connect_envelope(0, in.dump()) + "trailing");
  CHECK(got == in);
  CHECK_THROWS_AS(server::connect_stream_request("abc"), server::ConnectError);
  std::string shortenv = server::connect_envelope(0, "{\"a\":1}");
  shortenv.pop_back();
  CHECK_THROWS_AS(server::connect_stream_request(shortenv), server::ConnectError);
  CHECK_THROWS_AS(server::connect_stream_request(server::connect_envelope(1, "{}")), server::ConnectError);
  CHECK_THROWS_AS(server::connect_stream_request(server::connect_envelope(0, "{nope")), server::ConnectError);
}

TEST_CASE("connect_end_stream: flags 2, {} or the error") {
  std::string ok = server::connect_end_stream(std::nullopt);
  CHECK(ok[0] == 2);
  CHECK(ok.substr(5) == "{}");
  std::string err = server::connect_end_stream(server::ConnectError{"not_found", "gone"});
  CHECK(json::parse(err.substr(5)) == json{{"error", {{"code", "not_found"}, {"message", "gone"}}}});
}

TEST_CASE("connect_http_status follows the protocol's table") {
  CHECK(server::connect_http_status("not_found") == 404);
  CHECK(server::connect_http_status("invalid_argument") == 400);
  CHECK(server::connect_http_status("unauthenticated") == 401);
  CHECK(server::connect_http_status("already_exists") == 409);
  CHECK(server::connect_http_status("unavailable") == 503);
  CHECK(server::connect_http_status("unimplemented") == 501);
  CHECK(server::connect_http_status("no-such-code") == 500);
}

TEST_CASE("base64 round trips every byte value; decodes URL-safe and unpadded text") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n : {0, 1, 2, 3, 4, 255, 256}) {
    std::string s = all.substr(0, n);
    CHECK(server::base64_decode(server::base64_encode(s)) == s);
  }
  CHECK(server::base64_encode("hi\n") == "aGkK");
  CHECK(server::base64_encode("h") == "aA==");
  CHECK(server::base64_decode("aA") == "h");
  CHECK(server::base64_decode("-_8") == server::base64_decode("+/8="));
  CHECK_THROWS_AS(server::base64_decode("a*b"), server::ConnectError);
}
