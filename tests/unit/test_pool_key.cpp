#include <doctest.h>

#include "engine/pool.h"
#include "runtime/linux/sandbox_network.h"

using namespace sbx;

TEST_CASE("pool_key: sandboxes of different networks never share a pool") {
  SandboxSpec a;
  a.image_id = "sha256:abc";
  a.network = NetworkMode::None;
  SandboxSpec b = a;
  CHECK(engine::pool_key(a, true) == engine::pool_key(b, true));
  b.network = NetworkMode::Private;
  CHECK(engine::pool_key(a, true) != engine::pool_key(b, true));
  SandboxSpec c = b;
  c.net.allow_egress = {"192.0.2.10"};
  CHECK(engine::pool_key(b, true) != engine::pool_key(c, true));
  SandboxSpec d = c;
  d.net.dns = {"192.0.2.53"};  // written into the sandbox's /etc at setup
  CHECK(engine::pool_key(c, true) != engine::pool_key(d, true));
  SandboxSpec e = d;
  e.net.extra_hosts = {{"web.test", "192.0.2.10"}};
  CHECK(engine::pool_key(d, true) != engine::pool_key(e, true));
  CHECK(engine::pool_key(e, true) != engine::pool_key(e, false));  // user namespace
}

TEST_CASE("network_io_bytes: nothing for a sandbox without a veth") {
  CHECK_FALSE(runtime::network_io_bytes(std::string(64, '0')).has_value());
  CHECK_FALSE(runtime::network_io_bytes("short").has_value());
}
