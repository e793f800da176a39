#include <doctest.h>

#include "common/error.h"
#include "oci/digest.h"
#include "oci/reference.h"

using namespace sbx;
using namespace sbx::oci;
using K = Reference::Kind;

TEST_CASE("sha256 matches known vectors (FIPS 180-2)") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a");
  h.update("bc");
  CHECK(h.size() == 3);
  CHECK(h.hex() == sha256_hex("abc"));
  CHECK(is_sha256_digest("sha256:" + sha256_hex("abc")));
  CHECK_FALSE(is_sha256_digest("sha512:" + sha256_hex("abc")));
  CHECK_FALSE(is_sha256_digest("sha256:" + sha256_hex("abc").substr(1)));
  CHECK_THROWS_AS(digest_hex("sha256:ABC"), Error);
}

TEST_CASE("name[:tag] normalises like podman") {
  CHECK(parse_reference("busybox").str() == "busybox:latest");
  CHECK(parse_reference("busybox:latest").str() == "busybox:latest");
  CHECK(parse_reference("localhost/busybox").str() == "busybox:latest");
  CHECK(parse_reference("docker.io/library/busybox:1.36").str() == "busybox:1.36");
  CHECK(parse_reference("quay.io/org/app:v1.2-rc_3").str() == "quay.io/org/app:v1.2-rc_3");
  Reference r = parse_reference("localhost:5000/team/app");
  CHECK(r.kind == K::Name);
  CHECK(r.repository == "localhost:5000/team/app");  // ':5000' is a port, not a tag
  CHECK(r.tag == "latest");
  CHECK(normalize_name("my_app__x.y-z:t") == "my_app__x.y-z:t");
}

TEST_CASE("digests and ids") {
  std::string hex = sha256_hex("x");
  Reference d = parse_reference("busybox@sha256:" + hex);
  CHECK(d.kind == K::NameDigest);
  CHECK(d.repository == "busybox");
  CHECK(d.digest == "sha256:" + hex);
  CHECK(parse_reference("busybox:1@sha256:" + hex).kind == K::NameDigest);
  Reference id = parse_reference("sha256:" + hex);
  CHECK(id.kind == K::Id);
  CHECK(id.id == hex);
  CHECK(parse_reference(hex).kind == K::Id);  // a full id is never a name
  Reference pre = parse_reference("sha256:abc1");
  CHECK(pre.kind == K::Id);
  CHECK(pre.id == "abc1");
  Reference amb = parse_reference("cafe12");  // may be a name or an id prefix
  CHECK(amb.kind == K::Name);
  CHECK(amb.maybe_id);
  CHECK_FALSE(parse_reference("busybox").maybe_id);
}

TEST_CASE("invalid references get a clear error") {
  for (const char* bad : {"", "BusyBox", "busybox:", "busybox:-x", "a//b", "-a", "a-", "busybox@sha256:12",
                          "busybox@md5:" "0123", "sha256:xyz", "a b", "../x", "x:t@y"}) {
    std::string b = bad;
    CAPTURE(b);
    CHECK_THROWS_AS(parse_reference(bad), Error);
  }
  try {
    parse_reference("BusyBox");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("lower-case") != std::string::npos);
  }
  CHECK_THROWS_AS(normalize_name("busybox@sha256:" + sha256_hex("x")), Error);
  CHECK_THROWS_AS(normalize_name(sha256_hex("x")), Error);
  CHECK_THROWS_AS(parse_reference(std::string(600, 'a')), Error);
}
