// Named volumes' pure parts (engine/volumes.h): docker's name rule, which -v
// sources are volume names, the -v NAME:/PATH and --mount parsers, and the
// same mount reached through the CLI's flags and Docker's create body.
#include <doctest.h>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/sandbox_options.h"
#include "engine/volumes.h"
#include "server/docker/docker_spec.h"
#include "test_util.h"

using namespace sbx;
using nlohmann::json;

TEST_CASE("volume names follow docker's rule [a-zA-Z0-9][a-zA-Z0-9_.-]+") {
  for (const char* ok : {"ab", "vol1", "my_vol.2-x", "A9", "0a", "x.y"}) CHECK_MESSAGE(engine::valid_volume_name(ok), ok);
  for (const char* bad : {"", "a", "-ab", ".ab", "_ab", "a b", "a/b", "a:b", "/abs", "..", "é1", "a\n"})
    CHECK_MESSAGE(!engine::valid_volume_name(bad), bad);
  CHECK(!engine::valid_volume_name(std::string(256, 'a')));
  CHECK_THROWS_AS(engine::check_volume_name("a b"), Error);
  try {
    engine::check_volume_name("x/y");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("x/y") != std::string::npos);
  }
}

TEST_CASE("a -v source without a leading / or . is a volume name") {
  CHECK(engine::is_volume_source("cache"));
  CHECK(!engine::is_volume_source("/srv"));
  CHECK(!engine::is_volume_source("./rel"));
  CHECK(!engine::is_volume_source("~/x"));
  CHECK(!engine::is_volume_source(""));
}

TEST_CASE("-v NAME:/PATH[:ro|nocopy] is a volume mount; host paths stay binds") {
  spec::Mount m = engine::parse_volume("cache:/data");
  CHECK(m.type == engine::kVolumeMountType);
  CHECK(m.source == "cache");
  CHECK(m.destination == "/data");
  CHECK(m.options.empty());
  m = engine::parse_volume("cache:/data:ro,nocopy");
  CHECK(m.options == std::vector<std::string>{"ro", "nocopy"});
  CHECK(engine::parse_volume("cache:/data:rw").options.empty());
  CHECK(engine::parse_volume("/tmp:/data").type == "bind");
  CHECK_THROWS_AS(engine::parse_volume("cache:rel"), Error);
  CHECK_THROWS_AS(engine::parse_volume("cache:/d:idmap=host"), Error);  // a bind-only option
  CHECK_THROWS_AS(engine::parse_volume("c:/d"), Error);                // one character: not a name
  CHECK_THROWS_AS(engine::parse_volume("cache"), Error);
}

TEST_CASE("--mount type=volume|bind|tmpfs as docker's") {
  spec::Mount m = engine::parse_mount_flag("type=volume,source=cache,target=/c,readonly");
  CHECK(m.type == engine::kVolumeMountType);
  CHECK(m.source == "cache");
  CHECK(m.destination == "/c");
  CHECK(m.options == std::vector<std::string>{"ro"});
  m = engine::parse_mount_flag("src=cache,dst=/c,volume-nocopy");  // type defaults to volume
  CHECK(m.type == engine::kVolumeMountType);
  CHECK(m.options == std::vector<std::string>{"nocopy"});
  m = engine::parse_mount_flag("type=bind,source=/tmp,target=/t,ro=true");
  CHECK(m.type == "bind");
  CHECK(m.options == std::vector<std::string>{"rbind", "ro"});
  m = engine::parse_mount_flag("type=tmpfs,target=/run,tmpfs-size=1048576");
  CHECK(m.type == "tmpfs");
  CHECK(std::find(m.options.begin(), m.options.end(), "size=1048576") != m.options.end());
  m = engine::parse_mount_flag("type=volume,target=/x");  // no source: an anonymous volume (docker's)
  CHECK(m.type == engine::kVolumeMountType);
  CHECK(m.source.empty());
  CHECK(m.destination == "/x");
  CHECK_THROWS_AS(engine::parse_mount_flag("type=volume,source=cache"), Error);  // no target
  CHECK_THROWS_AS(engine::parse_mount_flag("type=volume,source=a b,target=/x"), Error);
  CHECK_THROWS_AS(engine::parse_mount_flag("type=nfs,source=x,target=/x"), Error);
  CHECK_THROWS_AS(engine::parse_mount_flag("type=volume,source=cache,target=/x,bogus=1"), Error);
}

TEST_CASE("a volume through -v, --mount and Docker's Binds/Mounts gives the same mount") {
  engine::ResolvedImage img;
  img.ref = "bare";
  img.id = std::string(64, 'e');
  img.config.cmd = {"true"};
  img.layer_dirs = {"/layers/0"};
  engine::SandboxOptions o;
  o.id = std::string(64, 'f');
  o.runtime = "native";
  o.volumes = {"cache:/data:ro"};
  auto a = engine::build_sandbox(o, img).spec.mounts;
  o.volumes.clear();
  o.mounts = {"type=volume,source=cache,target=/data,readonly"};
  auto b = engine::build_sandbox(o, img).spec.mounts;
  auto c = engine::build_sandbox(server::options_from_docker(json::parse(R"({"HostConfig": {"Binds": ["cache:/data:ro"],
      "Runtime": "native"}})"), o.id, ""), img).spec.mounts;
  auto d = engine::build_sandbox(server::options_from_docker(json::parse(R"({"HostConfig": {"Mounts": [{"Type": "volume",
      "Source": "cache", "Target": "/data", "ReadOnly": true}], "Runtime": "native"}})"), o.id, ""), img).spec.mounts;
  for (const auto* ms : {&a, &b, &c, &d}) {
    REQUIRE(ms->size() == 1);
    CHECK((*ms)[0].type == engine::kVolumeMountType);
    CHECK((*ms)[0].source == "cache");
    CHECK((*ms)[0].destination == "/data");
    CHECK((*ms)[0].options == std::vector<std::string>{"ro"});
  }
}

TEST_CASE("a volume mount without a source is anonymous through --mount, Docker's Mounts and /sbx/v1's mounts") {
  engine::ResolvedImage img;
  img.ref = "bare";
  img.id = std::string(64, 'e');
  img.config.cmd = {"true"};
  img.layer_dirs = {"/layers/0"};
  engine::SandboxOptions o;
  o.id = std::string(64, 'f');
  o.runtime = "native";
  o.mounts = {"type=volume,target=/anon"};
  auto a = engine::build_sandbox(o, img).spec.mounts;
  auto b = engine::build_sandbox(server::options_from_docker(json::parse(R"({"HostConfig": {"Mounts": [{"Type": "volume",
      "Target": "/anon"}], "Runtime": "native"}})"), o.id, ""), img).spec.mounts;
  for (const auto* ms : {&a, &b}) {
    REQUIRE(ms->size() == 1);
    CHECK((*ms)[0].type == engine::kVolumeMountType);
    CHECK((*ms)[0].source.empty());
    CHECK((*ms)[0].destination == "/anon");
  }
}

TEST_CASE("volume create options: tmpfs with a size, a bind of a host directory; others refused, nothing made") {
  test::TempDir t("vols");
  engine::Engine eng({t.path + "/root", t.path + "/run"});
  engine::VolumeCreateRequest r;
  r.name = "small";
  r.options = {{"type", "tmpfs"}, {"o", "size=1m,mode=1777"}};
  auto v = eng.create_volume(r);
  CHECK(v.options == r.options);
  CHECK(eng.inspect_volume("small").options == r.options);
  CHECK(nlohmann::json::parse(v.json())["Options"]["o"] == "size=1m,mode=1777");
  engine::VolumeCreateRequest b;
  b.name = "hostbind";
  b.options = {{"type", "none"}, {"o", "bind,ro"}, {"device", "/tmp"}};
  CHECK(eng.create_volume(b).options == b.options);
  auto refused = [&](std::map<std::string, std::string> opts) {
    engine::VolumeCreateRequest q;
    q.name = "bad";
    q.options = std::move(opts);
    CHECK_THROWS_AS(eng.create_volume(q), Error);
    CHECK_THROWS_AS(eng.inspect_volume("bad"), Error);
  };
  refused({{"size", "1m"}});                                   // a quota: not done
  refused({{"type", "ext4"}, {"device", "/dev/sda1"}});       // other types
  refused({{"type", "none"}, {"device", "/tmp"}});             // a bind needs o=bind
  refused({{"type", "none"}, {"o", "bind"}, {"device", "tmp"}});  // and an absolute device
  refused({{"type", "none"}, {"o", "bind,uid=5"}, {"device", "/tmp"}});
  refused({{"type", "tmpfs"}, {"o", "size=lots"}});
  refused({{"type", "tmpfs"}, {"o", "uid=5"}});
  refused({{"type", "tmpfs"}, {"bogus", "1"}});
}

TEST_CASE("volume_of_source names the volume of a _data path") {
  CHECK(engine::volume_of_source("/r", "/r/volumes/cache/_data") == "cache");
  CHECK(engine::volume_of_source("/r", "/r/volumes/cache") == "");
  CHECK(engine::volume_of_source("/r", "/other/volumes/cache/_data") == "");
}
