// sbx serve's pure parts: Docker's stream framing, URL decoding, and the
// mapping of a Docker container config onto a SandboxSpec.
#include <doctest.h>

#include "common/error.h"
#include "server/docker/api.h"
#include "server/docker/docker_spec.h"
#include "server/framing.h"
#include "server/http.h"

using namespace sbx;
using nlohmann::json;

TEST_CASE("docker_frame gives Docker's 8-byte multiplexed header") {
  std::string f = server::docker_frame(2, "hello");
  REQUIRE(f.size() == 13);
  CHECK(f[0] == 2);
  CHECK(f[1] == 0);
  CHECK(f[7] == 5);
  CHECK(f.substr(8) == "hello");
  std::string big = server::docker_frame(1, std::string(70000, 'x'));
  CHECK(static_cast<unsigned char>(big[5]) == 0x01);  // 70000 = 0x011170
  CHECK(static_cast<unsigned char>(big[6]) == 0x11);
  CHECK(static_cast<unsigned char>(big[7]) == 0x70);
}

TEST_CASE("prefixed frames: one byte, a big-endian 32-bit length, the payload; parsed back only when whole") {
  std::string f = server::prefixed_frame(7, std::string(0x010203, 'y'));
  REQUIRE(f.size() == 5 + 0x010203);
  CHECK(static_cast<unsigned char>(f[0]) == 7);
  CHECK(f.substr(1, 4) == std::string("\x00\x01\x02\x03", 4));
  std::string two = server::prefixed_frame(1, "ab") + server::prefixed_frame(4, "");
  auto a = server::parse_prefixed_frame(two);
  REQUIRE(a);
  CHECK(a->head == 1);
  CHECK(a->payload == "ab");
  CHECK(a->size == 7);
  auto b = server::parse_prefixed_frame(std::string_view(two).substr(a->size));
  REQUIRE(b);
  CHECK(b->head == 4);
  CHECK(b->payload.empty());
  CHECK_FALSE(server::parse_prefixed_frame(std::string_view(two).substr(0, 6)));  // short payload
  CHECK_FALSE(server::parse_prefixed_frame("\x01\x00\x00"));                      // short header
}

TEST_CASE("url_decode decodes percent escapes and '+'") {
  CHECK(server::url_decode("%2Ftmp%2Fa+b") == "/tmp/a b");
  CHECK(server::url_decode("%7B%22label%22%3A%5B%22a%3Db%22%5D%7D") == R"({"label":["a=b"]})");
  CHECK(server::url_decode("bad%2") == "bad%2");
}

TEST_CASE("spec_from_docker maps a Docker container config") {
  oci::ImageRecord img;
  img.id = std::string(64, 'a');
  img.config.entrypoint = {"/entry"};
  img.config.cmd = {"default"};
  img.config.env = {"PATH=/usr/bin:/bin", "A=image"};
  std::string id(64, 'b');
  json cfg = json::parse(R"({
    "Image": "busybox", "Cmd": ["echo", "hi"], "Env": ["A=mine", "B=2"], "WorkingDir": "/tmp",
    "User": "65534", "Labels": {"k": "v"},
    "HostConfig": {"Memory": 268435456, "NanoCpus": 1500000000, "PidsLimit": 64, "NetworkMode": "host",
                   "Mounts": [{"Type": "tmpfs", "Target": "/scratch"}]}})");
  SandboxSpec s = server::spec_from_docker(cfg, img, {"/l"}, id, "n1");
  CHECK(s.id == id);
  CHECK(s.name == "n1");
  CHECK(s.process.args == std::vector<std::string>{"/entry", "echo", "hi"});  // image Entrypoint + Cmd
  CHECK(std::find(s.process.env.begin(), s.process.env.end(), "A=mine") != s.process.env.end());
  CHECK(std::find(s.process.env.begin(), s.process.env.end(), "B=2") != s.process.env.end());
  CHECK(s.process.cwd == "/tmp");
  CHECK(s.labels.at("k") == "v");
  CHECK(*s.resources.memory_bytes == 268435456);
  CHECK(*s.resources.cpus == doctest::Approx(1.5));
  CHECK(*s.resources.pids_limit == 64);
  CHECK(s.network == NetworkMode::Host);
  CHECK_FALSE(engine::use_userns(s, server::userns_mode_from_docker(cfg)));  // the host's network: the host's ids
  REQUIRE(s.mounts.size() == 1);
  CHECK(s.mounts[0].type == "tmpfs");
  CHECK(s.runtime == "native");

  json ep = json::parse(R"({"Image": "x", "Entrypoint": ["/bin/sh", "-c"], "Cmd": ["exit 3"],
                             "HostConfig": {"Runtime": "gvisor"}})");
  SandboxSpec g = server::spec_from_docker(ep, img, {}, id, "");
  CHECK(g.process.args == std::vector<std::string>{"/bin/sh", "-c", "exit 3"});
  CHECK(g.runtime == "gvisor");
  CHECK(g.network == NetworkMode::None);  // Docker's default bridge: sbx's loopback-only network
  CHECK(server::userns_mode_from_docker(ep) == engine::UsernsMode::Auto);
  CHECK(engine::use_userns(g, server::userns_mode_from_docker(ep)));
  CHECK(server::spec_from_docker(json::parse(R"({"Labels": {"sbx.runtime": "gvisor"}})"), img, {}, id, "").runtime ==
        "gvisor");
  CHECK(server::spec_from_docker(json::object(), img, {}, id, "", "gvisor").runtime == "gvisor");
}

TEST_CASE("spec_from_docker refuses what sbx cannot do") {
  oci::ImageRecord img;
  img.config.cmd = {"true"};
  std::string id(64, 'c');
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "container:abc"}})"), img, {},
                                           id, ""),
                  Error);
  // An endpoint on a network the container does not join, two addresses on one.
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "host"},
      "NetworkingConfig": {"EndpointsConfig": {"front": {"Aliases": ["a"]}}}})"), img, {}, id, ""),
                  Error);
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"Binds": ["bad name:/data"]}})"), img, {}, id, ""),
                  Error);
  // (A volume mount without a source is an anonymous volume, as docker's.)
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"Mounts": [{"Type": "volume", "Source": "bad name", "Target": "/d"}]}})"),
                                           img, {}, id, ""),
                  Error);
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"Binds": ["/tmp:rel"]}})"), img, {}, id, ""),
                  Error);
  CHECK_THROWS_AS(
      server::spec_from_docker(json::parse(R"({"HostConfig": {"Runtime": "kata"}})"), img, {}, id, ""), Error);
}

TEST_CASE("spec_from_docker maps PortBindings, CapAdd/CapDrop; gpus_from_docker maps DeviceRequests") {
  oci::ImageRecord img;
  img.config.cmd = {"true"};
  std::string id(64, 'd');
  json cfg = json::parse(R"({"HostConfig": {"PortBindings": {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "18080"}],
                                                              "53/udp": [{"HostIp": "", "HostPort": "5353"}]},
                                             "CapDrop": ["ALL"], "CapAdd": ["chown", "CAP_NET_RAW"]}})");
  SandboxSpec s = server::spec_from_docker(cfg, img, {}, id, "");
  CHECK(s.network == NetworkMode::Private);  // ports need a network of its own
  // … and keep a user namespace of their own (they once ran as host root).
  CHECK(engine::use_userns(s, server::userns_mode_from_docker(cfg)));
  REQUIRE(s.net.publish.size() == 2);
  bool tcp = false, udp = false;
  for (const auto& p : s.net.publish) {
    if (p.protocol == "tcp") tcp = p.host_ip == "127.0.0.1" && p.host_port == 18080 && p.container_port == 8080;
    if (p.protocol == "udp") udp = p.host_ip.empty() && p.host_port == 5353 && p.container_port == 53;
  }
  CHECK(tcp);
  CHECK(udp);
  CHECK(s.process.capabilities == std::vector<std::string>{"CAP_CHOWN", "CAP_NET_RAW"});
  // An empty PortBindings (what the docker CLI always sends) changes nothing.
  CHECK(server::spec_from_docker(json::parse(R"({"HostConfig": {"PortBindings": {}}})"), img, {}, id, "").network ==
        NetworkMode::None);
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "none",
      "PortBindings": {"80/tcp": [{"HostPort": "8080"}]}}})"), img, {}, id, ""), Error);
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"PortBindings": {"80/tcp": [{}]}}})"), img,
                                           {}, id, ""), Error);  // no random host ports
  CHECK_THROWS_AS(server::spec_from_docker(json::parse(R"({"HostConfig": {"CapAdd": ["NOSUCH"]}})"), img, {}, id, ""),
                  Error);

  CHECK_FALSE(server::gpus_from_docker(json::parse(R"({"HostConfig": {}})")));
  auto all = server::gpus_from_docker(json::parse(
      R"({"HostConfig": {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]}})"));
  REQUIRE(all);
  CHECK(all->gpus == "all");
  auto two = server::gpus_from_docker(json::parse(R"({"HostConfig": {"DeviceRequests": [{"Count": 2}]}})"));
  CHECK(two->gpus == "count=2");
  auto ids = server::gpus_from_docker(json::parse(R"({"HostConfig": {"DeviceRequests": [{"DeviceIDs": ["0", "GPU-x"]}],
                                                      "Devices": [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse"}]}})"));
  CHECK(ids->gpus == "device=0,GPU-x");
  CHECK(ids->devices == std::vector<std::string>{"/dev/fuse"});
  auto cdi = server::gpus_from_docker(json::parse(R"({"HostConfig": {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=0"]}]}})"));
  CHECK(cdi->devices == std::vector<std::string>{"nvidia.com/gpu=0"});
  CHECK_THROWS_AS(server::gpus_from_docker(json::parse(R"({"HostConfig": {"DeviceRequests": [{"Driver": "amd"}]}})")), Error);
  CHECK_THROWS_AS(server::gpus_from_docker(json::parse(
                      R"({"HostConfig": {"DeviceRequests": [{"Capabilities": [["compute"]]}]}})")), Error);
  CHECK_THROWS_AS(server::gpus_from_docker(json::parse(
                      R"({"HostConfig": {"Devices": [{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/x"}]}})")), Error);
}

TEST_CASE("HostConfig.UsernsMode: empty is a user namespace of the container's own, host is none, others are refused") {
  auto mode = [](const char* body) { return server::userns_mode_from_docker(json::parse(body)); };
  CHECK(mode(R"({})") == engine::UsernsMode::Auto);
  CHECK(mode(R"({"HostConfig": {}})") == engine::UsernsMode::Auto);
  CHECK(mode(R"({"HostConfig": {"UsernsMode": ""}})") == engine::UsernsMode::Auto);
  CHECK(mode(R"({"HostConfig": {"UsernsMode": null}})") == engine::UsernsMode::Auto);
  CHECK(mode(R"({"HostConfig": {"UsernsMode": "host"}})") == engine::UsernsMode::Host);
  for (const char* bad : {R"({"HostConfig": {"UsernsMode": "private"}})", R"({"HostConfig": {"UsernsMode": "keep-id"}})",
                          R"({"HostConfig": {"UsernsMode": "HOST"}})", R"({"HostConfig": {"UsernsMode": 1}})"}) {
    CAPTURE(bad);
    try {
      mode(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("UsernsMode") != std::string::npos);
    }
  }
  // Published ports, a private network: their own ids unless "host" is asked for.
  SandboxSpec s;
  s.network = NetworkMode::Private;
  CHECK(engine::use_userns(s, engine::UsernsMode::Auto));
  CHECK_FALSE(engine::use_userns(s, engine::UsernsMode::Host));
  s.network = NetworkMode::Host;
  CHECK_FALSE(engine::use_userns(s, engine::UsernsMode::Auto));
}

TEST_CASE("spec_from_docker maps NetworkMode and NetworkingConfig.EndpointsConfig onto user-defined networks") {
  oci::ImageRecord img;
  img.config.cmd = {"true"};
  std::string id(64, 'd');
  SandboxSpec s = server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "front"},
      "NetworkingConfig": {"EndpointsConfig": {
        "back": {"Aliases": ["db"], "IPAMConfig": {"IPv4Address": "192.0.2.7"}},
        "front": {"Aliases": ["web", "www"]}}}})"),
                                           img, {}, id, "");
  CHECK(s.network == NetworkMode::User);
  REQUIRE(s.net.networks.size() == 2);
  CHECK(s.net.networks[0].network == "front");  // NetworkMode's first: its default route
  CHECK(s.net.networks[0].aliases == std::vector<std::string>{"web", "www"});
  CHECK(s.net.networks[0].ip.empty());
  CHECK(s.net.networks[1].network == "back");
  CHECK(s.net.networks[1].aliases == std::vector<std::string>{"db"});
  CHECK(s.net.networks[1].ip == "192.0.2.7");
  // The default mode with an endpoint (docker-py's networking_config): that network.
  s = server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "default"},
      "NetworkingConfig": {"EndpointsConfig": {"front": {}}}})"), img, {}, id, "");
  CHECK(s.network == NetworkMode::User);
  REQUIRE(s.net.networks.size() == 1);
  CHECK(s.net.networks[0].network == "front");
  // bridge and none stay loopback only; PortBindings on a user network keep it.
  s = server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "bridge"}})"), img, {}, id, "");
  CHECK(s.network == NetworkMode::None);
  s = server::spec_from_docker(json::parse(R"({"HostConfig": {"NetworkMode": "front",
      "PortBindings": {"80/tcp": [{"HostPort": "18080"}]}}})"), img, {}, id, "");
  CHECK(s.network == NetworkMode::User);
  CHECK(s.net.publish.size() == 1);
}
