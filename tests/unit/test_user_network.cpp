// User-defined networks: the pure parts (subnets, names, nft scripts, the
// sandbox's resolv.conf) and the errors bad input gets before anything is
// touched; the kernel side is tests/integration/test_user_networks.sh.
#include <doctest.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/linux/network_rules.h"
#include "runtime/linux/user_network.h"

using namespace sbx;
using namespace sbx::runtime;

TEST_CASE("user network: subnets from the pool, from its top, around what is taken") {
  Ipv4Prefix pool = parse_cidr("10.213.0.0/16", "x");
  CHECK(default_subnet_len(pool) == 24);
  CHECK(default_subnet_len(parse_cidr("198.51.100.128/26", "x")) == 28);
  CHECK(default_subnet_len(parse_cidr("192.0.2.0/28", "x")) == 29);
  CHECK(format_cidr(pick_subnet(pool, 24, {})) == "10.213.255.0/24");
  // The private /30s sit at the bottom of the pool; a network at 10.213.255/24 already.
  std::vector<Ipv4Prefix> taken = {parse_cidr("10.213.255.0/24", "x"), parse_cidr("10.213.254.8/30", "x")};
  CHECK(format_cidr(pick_subnet(pool, 24, taken)) == "10.213.253.0/24");
  // Full: a Conflict (409), not a crash.
  Ipv4Prefix small = parse_cidr("192.0.2.0/28", "x");
  try {
    pick_subnet(small, 29, {parse_cidr("192.0.2.0/29", "x"), parse_cidr("192.0.2.8/29", "x")});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Conflict);
  }
}

TEST_CASE("user network: names of interfaces and MACs") {
  CHECK(mac_for(parse_ipv4("198.51.100.178", "x")) == "02:5b:c6:33:64:b2");
  std::string a = port_name(std::string(64, 'a'), std::string(64, 'b'));
  CHECK(a.size() == 15);  // IFNAMSIZ - 1
  CHECK(a.rfind("sbp", 0) == 0);
  CHECK(a != port_name(std::string(64, 'a'), std::string(64, 'c')));
  CHECK(a == port_name(std::string(64, 'a'), std::string(64, 'b')));
  for (const char* r : {"none", "host", "private", "bridge"}) CHECK(is_reserved_network_name(r));
  CHECK(!is_reserved_network_name("app"));
}

TEST_CASE("user network: bad input is refused with a kind a server maps to a status") {
  auto kind_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  NetworkCreateOptions o;
  o.name = "bad/name";
  CHECK(kind_of([&] { create_user_network("/nonexistent-run-root", o); }) == ErrorKind::InvalidArgument);
  o.name = "none";
  CHECK(kind_of([&] { create_user_network("/nonexistent-run-root", o); }) == ErrorKind::InvalidArgument);
  o.name = "ok";
  o.internal = true;
  o.allow_egress = {"198.51.100.0/24"};
  CHECK(kind_of([&] { create_user_network("/nonexistent-run-root", o); }) == ErrorKind::InvalidArgument);
  o = {};
  o.name = "ok";
  o.subnet = "198.51.100.7/24";  // not the network's first address
  CHECK(kind_of([&] { create_user_network("/nonexistent-run-root", o); }) == ErrorKind::InvalidArgument);
  o.subnet = "";
  o.driver = "overlay";
  CHECK(kind_of([&] { create_user_network("/nonexistent-run-root", o); }) == ErrorKind::InvalidArgument);
  CHECK(kind_of([&] { remove_user_network("/nonexistent-run-root", "host"); }) == ErrorKind::Forbidden);
}

TEST_CASE("user network: its rules") {
  UserNetwork n;
  n.id = "0123456789abcdef" + std::string(48, '0');
  n.name = "app";
  n.bridge = "sbb0123456789ab";
  n.gateway = parse_ipv4("10.213.255.1", "x");
  SUBCASE("open: one network among itself, its DNS server, nothing else of its own") {
    std::string s = nft_network_script(n);
    CHECK(s.find("add element inet sbxnet same { \"sbb0123456789ab\" . \"sbb0123456789ab\" }") != std::string::npos);
    CHECK(s.find("add element inet sbxnet dns { \"sbb0123456789ab\" . 10.213.255.1 }") != std::string::npos);
    CHECK(s.find("egress") == std::string::npos);
  }
  SUBCASE("internal: refused outright after the shared refusals") {
    n.internal = true;
    CHECK(nft_network_script(n).find("add element inet sbxnet egress { \"sbb0123456789ab\" : goto refuse }") !=
          std::string::npos);
  }
  SUBCASE("an allow list: deny first, then allow, then refuse") {
    n.allow_egress = {"198.51.100.0/24", "example.test"};
    n.deny_egress = {"198.51.100.9"};
    std::string s = nft_network_script(n);
    size_t deny = s.find("en-0123456789ab ip daddr @dn-"), allow = s.find("en-0123456789ab ip daddr @an-"),
           rest = s.find("add rule inet sbxnet en-0123456789ab goto refuse");
    REQUIRE(deny != std::string::npos);
    CHECK(deny < allow);
    CHECK(allow < rest);
    CHECK(s.find("add element inet sbxnet an-0123456789ab { 198.51.100.0/24 }") != std::string::npos);
    auto cmds = nft_network_release_commands(n);
    CHECK(std::find(cmds.begin(), cmds.end(), "delete chain inet sbxnet en-0123456789ab") != cmds.end());
  }
  SUBCASE("the table: same network before the refusal of other sandboxes; bridge ports bound to MAC and address") {
    std::string t = nft_table_script();
    size_t same = t.find("add rule inet sbxnet forward iifname . oifname @same accept");
    size_t others = t.find("oifname { \"sbv*\", \"sbb*\", \"sbx*\" } goto refuse");
    REQUIRE(same != std::string::npos);
    CHECK(same < others);
    CHECK(t.find("add rule bridge sbxnet guard ether type ip iifname . ether saddr . ip saddr @bound accept") !=
          std::string::npos);
    CHECK(t.find("add rule bridge sbxnet guard drop") != std::string::npos);
  }
}

TEST_CASE("user network: an endpoint's rules and the sandbox's resolv.conf") {
  NetworkEndpoint e;
  e.port = "sbp0123456789ab";
  e.address = parse_ipv4("10.213.255.7", "x");
  e.mac = mac_for(e.address);
  e.publish = {{"", 8080, 80, "tcp"}};
  std::string s = nft_endpoint_script(e);
  CHECK(s.find("add element bridge sbxnet bound { \"sbp0123456789ab\" . 02:5b:0a:d5:ff:07 . 10.213.255.7 }") !=
        std::string::npos);
  CHECK(s.find("add element inet sbxnet pub_tcp_any { 8080 : 10.213.255.7 . 80 }") != std::string::npos);
  CHECK(nft_endpoint_release_commands(e).size() == 2);

  UserNetwork open, internal;
  open.id = std::string(64, 'a');
  internal.id = std::string(64, 'b');
  internal.internal = true;
  NetworkEndpoint eo, ei;
  eo.network_id = open.id;
  eo.gateway = parse_ipv4("10.213.255.1", "x");
  ei.network_id = internal.id;
  ei.gateway = parse_ipv4("10.213.254.1", "x");
  // The open network's server forwards every name (NXDOMAIN ends a lookup):
  // the internal one, which answers REFUSED for names it does not know, first.
  CHECK(endpoints_resolv_conf({eo, ei}, {open, internal}).find("nameserver 10.213.254.1\nnameserver 10.213.255.1\n") !=
        std::string::npos);
}
