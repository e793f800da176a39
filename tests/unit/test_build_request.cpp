// The build endpoints' parameters (server/build_request.h): the query of
// POST /build (and /sbx/v1/build) as build::BuildOptions, bad ones refused
// before anything is built.
#include <doctest.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include "oci/reference.h"
#include "server/build_request.h"
#include "server/http.h"

using namespace sbx;

namespace {

server::Request req(const std::string& target, const std::string& body = "FROM busybox\n") {
  server::Request r;
  r.method = "POST";
  r.target = target;
  server::split_target(r);
  r.body = body;
  return r;
}

bool refused(const std::string& target) {
  try {
    server::build_options(req(target));
  } catch (const Error& e) {
    return e.kind() == ErrorKind::InvalidArgument || e.kind() == ErrorKind::Unsupported;
  }
  return false;
}

}  // namespace

TEST_CASE("build_options: Docker's query parameters") {
  auto o = server::build_options(req(
      "/v1.44/build?t=a&t=b:2&dockerfile=sub/Dockerfile.x&buildargs=%7B%22A%22%3A%221%22%2C%22N%22%3Anull%7D"
      "&labels=%7B%22k%22%3A%22v%22%7D&target=s1&nocache=1&pull=1&networkmode=none&rm=1&forcerm=1"));
  // Both names, in order, normalised as `sbx build -t` normalises them.
  CHECK(o.tags == std::vector<std::string>{oci::normalize_name("a"), oci::normalize_name("b:2")});
  CHECK(o.tags[1].ends_with("b:2"));
  CHECK(o.dockerfile == "sub/Dockerfile.x");
  REQUIRE(o.build_args.size() == 1);  // a null value: not given
  CHECK(o.build_args[0] == std::pair<std::string, std::string>{"A", "1"});
  CHECK(o.labels.at("k") == "v");
  CHECK(o.target == "s1");
  CHECK(o.no_cache);
  CHECK(o.pull == oci::PullPolicy::Always);
  CHECK(o.network == NetworkMode::None);
  CHECK_FALSE(o.forward_signals);
  CHECK(o.has_dockerfile_text);  // a body that is no tar: a Dockerfile alone
  CHECK(o.context_limits.max_bytes == server::kMaxBuildContext);
  auto d = server::build_options(req("/build?dockerfile=/Dockerfile&pull=False"));
  CHECK(d.dockerfile == "Dockerfile");  // a leading / is the context's root
  CHECK(d.pull == oci::PullPolicy::Missing);
  CHECK(d.network == NetworkMode::Private);
}

TEST_CASE("build_options refuses what it cannot build, before building") {
  CHECK(refused("/build?dockerfile=../Dockerfile"));
  CHECK(refused("/build?dockerfile=a/../../x"));
  CHECK(refused("/build?buildargs=notjson"));
  CHECK(refused("/build?buildargs=%5B%5D"));            // [] is no object
  CHECK(refused("/build?labels=%7B%22k%22%3A1%7D"));    // {"k":1}: not a string
  CHECK(refused("/build?networkmode=container%3Ax"));
  CHECK(refused("/build?pull=sometimes"));
  CHECK(refused("/build?t=UPPER%2Fcase"));
  CHECK(refused("/build?remote=https%3A%2F%2Fexample.com%2Fx.git"));
  CHECK(refused("/build?version=2"));
  CHECK(refused("/build?squash=1"));
  CHECK_FALSE(refused("/build?version=1&networkmode=host"));
  CHECK_THROWS_AS(server::build_options(req("/build", "")), Error);  // no context at all
}

TEST_CASE("tagged_name adds :latest as Docker prints it") {
  CHECK(server::tagged_name("x") == "x:latest");
  CHECK(server::tagged_name("x:1") == "x:1");
  CHECK(server::tagged_name("localhost:5000/x") == "localhost:5000/x:latest");
  CHECK(server::tagged_name("x@sha256:abc") == "x@sha256:abc");
}
