#include <doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "oci/auth_config.h"
#include "oci/pull.h"
#include "oci/registries_conf.h"
#include "oci/registry_client.h"

using namespace sbx;
using namespace sbx::oci;

TEST_CASE("parse_remote_ref resolves references as docker and podman do") {
  bool q = true;
  RemoteRef r = parse_remote_ref("python", &q);
  CHECK(!q);
  CHECK(r.registry == "docker.io");
  CHECK(r.api_host() == "registry-1.docker.io");
  CHECK(r.repository == "library/python");
  CHECK(r.tag == "latest");
  CHECK(r.local_name() == "python:latest");

  r = parse_remote_ref("docker.io/library/python:3.12", &q);
  CHECK(q);
  CHECK(r.repository == "library/python");
  CHECK(r.tag == "3.12");
  CHECK(r.local_name() == "python:3.12");

  r = parse_remote_ref("ghcr.io/o/r:v1");
  CHECK(r.registry == "ghcr.io");
  CHECK(r.repository == "o/r");
  CHECK(r.local_name() == "ghcr.io/o/r:v1");

  std::string d = "sha256:" + std::string(64, 'a');
  r = parse_remote_ref("127.0.0.1:5000/busybox@" + d, &q);
  CHECK(q);
  CHECK(r.registry == "127.0.0.1:5000");
  CHECK(r.repository == "busybox");
  CHECK(r.digest == d);
  CHECK(r.local_name() == "");

  r = parse_remote_ref("localhost:5000/a/b");
  CHECK(r.registry == "localhost:5000");
  CHECK(r.repository == "a/b");
  r = parse_remote_ref("org/app");
  CHECK(r.registry == "docker.io");
  CHECK(r.repository == "org/app");

  CHECK_THROWS_AS(parse_remote_ref("sha256:" + std::string(64, 'b')), Error);
  CHECK_THROWS_AS(parse_remote_ref("Upper/Case"), Error);
  CHECK_THROWS_AS(parse_remote_ref(""), Error);
}

TEST_CASE("is_loopback_registry allows plain HTTP only on loopback") {
  CHECK(is_loopback_registry("localhost:5000"));
  CHECK(is_loopback_registry("127.0.0.1:5000"));
  CHECK(is_loopback_registry("127.1.2.3"));
  CHECK(is_loopback_registry("[::1]:5000"));
  CHECK(!is_loopback_registry("docker.io"));
  CHECK(!is_loopback_registry("127.0.0.1.example.com"));
  CHECK(!is_loopback_registry("localhost.example.com:5000"));
}

TEST_CASE("base64 round trip (RFC 4648 test vectors)") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_decode("Zm9vYg==") == "foob");
  CHECK(base64_decode(base64_encode("user:p@ss:w0rd")) == "user:p@ss:w0rd");
  CHECK_THROWS_AS(base64_decode("Zm9v!"), Error);
}

TEST_CASE("auth file: save, find, remove; mode 0600") {
  char tmpl[] = "/tmp/sbx-auth-test.XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  std::string dir = tmpl, file = dir + "/sub/auth.json";
  CHECK(!find_credentials("127.0.0.1:1", file).has_value());
  save_credentials("127.0.0.1:1", {"alice", "s:e:cret"}, file);
  struct stat st;
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto c = find_credentials("127.0.0.1:1", file);
  REQUIRE(c.has_value());
  CHECK(c->username == "alice");
  CHECK(c->password == "s:e:cret");
  CHECK(fs::read_file(file).find("s:e:cret") == std::string::npos);  // base64, not plain
  CHECK(remove_credentials("127.0.0.1:1", file));
  CHECK(!remove_credentials("127.0.0.1:1", file));
  CHECK(!find_credentials("127.0.0.1:1", file).has_value());
  // docker's config.json key for Docker Hub.
  fs::write_file_atomic(file, R"({"auths":{"https://index.docker.io/v1/":{"auth":"Ym9iOnB3"}}})", 0600);
  c = find_credentials("docker.io", file);
  REQUIRE(c.has_value());
  CHECK(c->username == "bob");
  fs::write_file_atomic(file, "not json", 0600);
  CHECK_THROWS_AS(find_credentials("docker.io", file), Error);
  ::unlink(file.c_str());
  ::rmdir((dir + "/sub").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("parse_pull_policy takes podman's names") {
  CHECK(parse_pull_policy("missing") == PullPolicy::Missing);
  CHECK(parse_pull_policy("always") == PullPolicy::Always);
  CHECK(parse_pull_policy("never") == PullPolicy::Never);
  CHECK(parse_pull_policy("newer") == PullPolicy::Newer);
  CHECK_THROWS_AS(parse_pull_policy("sometimes"), Error);
}

TEST_CASE("registries.conf subset: search list, registry entries, mirrors") {
  RegistriesConf c = parse_registries_conf(R"(# comment
unqualified-search-registries = ["quay.io", # first
  "docker.io"]
[[registry]]
location = "localhost:5000"
insecure = true
[[registry.mirror]]
location = "mirror.example:5000/cache"
insecure = false
[[registry]]
prefix = "evil.example"
location = "evil.example"
blocked = true
[aliases]
"x" = "y"
)",
                                           "test.conf");
  REQUIRE(c.search.size() == 2);
  CHECK(c.search[0] == "quay.io");
  CHECK(c.search[1] == "docker.io");
  REQUIRE(c.registries.size() == 2);
  const RegistryEntry* e = c.find("localhost:5000", "a/b");
  REQUIRE(e);
  CHECK(e->insecure);
  REQUIRE(e->mirrors.size() == 1);
  CHECK(e->mirrors[0].location == "mirror.example:5000/cache");
  CHECK(c.find("evil.example", "x")->blocked);
  CHECK(c.find("evil.example.com", "x") == nullptr);
  CHECK(c.find("docker.io", "library/python") == nullptr);
  CHECK_THROWS_AS(parse_registries_conf("[[registry]]\ninsecure = maybe\n", "bad.conf"), Error);
  CHECK_THROWS_AS(parse_registries_conf("[[registry]]\ninsecure = true\n", "noloc.conf"), Error);
  CHECK(load_registries_conf("/nonexistent/registries.conf").registries.empty());
}
