// --network private: parsing of its flags and the nft rules it writes
// (runtime/linux/sandbox_network.h); the kernel side is tests/integration/test_network.sh.
#include <doctest.h>

#include "common/error.h"
#include <algorithm>

#include "runtime/linux/dns_proxy.h"
#include "runtime/linux/netlink.h"
#include "runtime/linux/sandbox_network.h"

using namespace sbx;
using namespace sbx::runtime;

TEST_CASE("network: CIDRs are parsed and normalised") {
  auto p = parse_cidr("198.51.100.77/24", "x");
  CHECK(format_cidr(p) == "198.51.100.0/24");
  CHECK(format_cidr(parse_cidr("203.0.113.9", "x")) == "203.0.113.9/32");
  CHECK(format_cidr(parse_cidr("0.0.0.0/0", "x")) == "0.0.0.0/0");
  CHECK_THROWS_AS(parse_cidr("300.1.2.3/8", "--allow-egress"), Error);
  CHECK_THROWS_AS(parse_cidr("1.2.3.4/33", "--allow-egress"), Error);
  CHECK_THROWS_AS(parse_cidr("1.2.3.4/", "--allow-egress"), Error);
  CHECK_THROWS_AS(parse_cidr("example", "--allow-egress"), Error);
}

TEST_CASE("network: --publish as docker and podman") {
  auto m = parse_publish("8080:80");
  CHECK(m.host_ip.empty());
  CHECK(m.host_port == 8080);
  CHECK(m.container_port == 80);
  CHECK(m.protocol == "tcp");
  m = parse_publish("127.0.0.1:5353:53/udp");
  CHECK(m.host_ip == "127.0.0.1");
  CHECK(m.protocol == "udp");
  CHECK(parse_publish(":9000:90").host_ip.empty());
  for (const char* bad : {"80", "0:80", "8080:70000", "a:80", "8080:80/sctp", "1.2.3:80:80", "1:2:3:4"})
    CHECK_THROWS_AS(parse_publish(bad), Error);
}

TEST_CASE("network: options are validated before anything is made") {
  spec::NetworkOptions o;
  o.allow_egress = {"198.51.100.0/24", "203.0.113.7"};
  o.deny_egress = {"198.51.100.9"};
  o.dns = {"198.51.100.53"};
  o.extra_hosts = {{"web.test", "198.51.100.10"}};
  CHECK_NOTHROW(validate_network_options(o));
  auto bad = o;
  bad.allow_egress = {"not a cidr!"};
  CHECK_THROWS_AS(validate_network_options(bad), Error);
  bad = o;
  bad.dns = {"dns.example"};
  CHECK_THROWS_AS(validate_network_options(bad), Error);
  bad = o;
  bad.extra_hosts = {{"web.test", "nope"}};
  CHECK_THROWS_AS(validate_network_options(bad), Error);
  bad = o;
  bad.publish = {parse_publish("8080:80"), parse_publish("127.0.0.1:8080:81")};
  CHECK_THROWS_AS(validate_network_options(bad), Error);
  bad.publish = {parse_publish("8080:80"), parse_publish("8080:80/udp")};
  CHECK_NOTHROW(validate_network_options(bad));
}

TEST_CASE("network: the nft rules of a sandbox") {
  NetworkLease l;
  l.id = "0123456789abcdef";
  l.veth = "sbv0123456789ab";
  l.address = parse_ipv4("10.213.0.6", "x");
  l.gateway = parse_ipv4("10.213.0.5", "x");
  l.publish = {parse_publish("8080:80"), parse_publish("127.0.0.1:5353:53/udp")};
  spec::NetworkOptions o;

  SUBCASE("no egress rules: only its ports; the table's shared rules cover the rest") {
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("chain") == std::string::npos);
    CHECK(s.find("add element inet sbxnet pub_tcp_any { 8080 : 10.213.0.6 . 80 }") != std::string::npos);
    CHECK(s.find("add element inet sbxnet pub_udp { 127.0.0.1 . 5353 : 10.213.0.6 . 53 }") != std::string::npos);
    l.publish.clear();
    CHECK(nft_sandbox_script(l, o).empty());
  }
  SUBCASE("deny only: back to the shared rules after it") {
    o.deny_egress = {"198.51.100.9"};
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("add rule inet sbxnet e-0123456789ab return") != std::string::npos);
    CHECK(s.find("add element inet sbxnet egress { \"sbv0123456789ab\" : goto e-0123456789ab }") != std::string::npos);
    CHECK(s.find("dns") == std::string::npos);
  }
  SUBCASE("an allow list refuses all else; deny is checked first") {
    o.allow_egress = {"198.51.100.0/24"};
    o.deny_egress = {"198.51.100.9"};
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("add element inet sbxnet a-0123456789ab { 198.51.100.0/24 }") != std::string::npos);
    CHECK(s.find("add element inet sbxnet d-0123456789ab { 198.51.100.9/32 }") != std::string::npos);
    CHECK(s.find("169.254.0.0/16") == std::string::npos);
    size_t deny = s.find("e-0123456789ab ip daddr @d-"), allow = s.find("e-0123456789ab ip daddr @a-"),
           rest = s.find("add rule inet sbxnet e-0123456789ab goto refuse");
    REQUIRE(deny != std::string::npos);
    CHECK(deny < allow);
    CHECK(allow < rest);
  }
  SUBCASE("a domain allow list opens its DNS proxy on the gateway, and nothing else of the host") {
    o.allow_egress = {"example.test"};
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("add element inet sbxnet dns { \"sbv0123456789ab\" . 10.213.0.5 }") != std::string::npos);
    l.allow_egress = o.allow_egress;
    l.rules = true;
    auto cmds = nft_release_commands(l);
    CHECK(std::find(cmds.begin(), cmds.end(), "delete element inet sbxnet dns { \"sbv0123456789ab\" . 10.213.0.5 }") !=
          cmds.end());
    CHECK(std::find(cmds.begin(), cmds.end(), "delete chain inet sbxnet e-0123456789ab") != cmds.end());
  }
}

TEST_CASE("network: the refusals come before any allow list") {
  std::string t = nft_table_script();
  auto at = [&](const std::string& r) {
    size_t p = t.find(r);
    CHECK_MESSAGE(p != std::string::npos, r);
    return p;
  };
  // forward: other sandboxes (ours and an older sbx's), IPv6, link-local and
  // the rest, then the sandbox's own chain (vmap @egress), then open.
  size_t others = at("add rule inet sbxnet forward iifname { \"sbv*\", \"sbb*\" } oifname { \"sbv*\", \"sbb*\", \"sbx*\" } goto refuse");
  size_t v6 = at("add rule inet sbxnet forward iifname { \"sbv*\", \"sbb*\" } meta nfproto ipv6 goto refuse");
  size_t ll = at("add rule inet sbxnet forward iifname { \"sbv*\", \"sbb*\" } ip daddr { 0.0.0.0/8, 127.0.0.0/8, "
                 "169.254.0.0/16, 224.0.0.0/3 } goto refuse");
  size_t own = at("add rule inet sbxnet forward iifname vmap @egress");
  CHECK(others < own);
  CHECK(v6 < own);
  CHECK(ll < own);
  // input: the host refuses all but the DNS servers sbx runs (no allow list is consulted).
  size_t dns = at("add rule inet sbxnet input iifname . ip daddr @dns udp dport 53 accept");
  size_t host = at("add rule inet sbxnet input iifname { \"sbv*\", \"sbb*\" } goto refuse");
  CHECK(dns < host);
  CHECK(t.find("ingress") == std::string::npos);
  // A forged source address never gets through.
  at("add rule inet sbxnet guard iifname { \"sbv*\", \"sbb*\" } fib saddr . iif oif missing drop");
  at("add rule inet sbxnet guard iifname { \"sbv*\", \"sbb*\" } fib saddr type local drop");
}

TEST_CASE("network: /etc/hosts and resolv.conf") {
  spec::NetworkOptions o;
  o.dns = {"198.51.100.53"};
  o.extra_hosts = {{"web.test", "198.51.100.10"}};
  CHECK(resolv_conf_for(o, 0).find("nameserver 198.51.100.53\n") != std::string::npos);
  std::string h = hosts_for("box1", parse_ipv4("10.213.0.2", "x"), o);
  CHECK(h.find("10.213.0.2\tbox1\n") != std::string::npos);
  CHECK(h.find("198.51.100.10\tweb.test\n") != std::string::npos);
  CHECK(h.find("127.0.0.1\tlocalhost") != std::string::npos);
  o.dns.clear();
  CHECK(resolv_conf_for(o, 0).find("nameserver 127.") == std::string::npos);
}

TEST_CASE("network: domain patterns of --allow-egress") {
  for (const char* ok : {"example.test", "*.example.test", "a-b.example.test", "x1.io"}) CHECK(is_domain_pattern(ok));
  for (const char* bad : {"example", "*.", "*.com", "-a.test", "a..test", "a.test.", "1.2.3.4", "exa_mple.test",
                          "*example.test", "a.*.test"})
    CHECK_MESSAGE(!is_domain_pattern(bad), bad);
  spec::NetworkOptions o;
  o.allow_egress = {"198.51.100.0/24", "Example.TEST", "*.wild.test"};
  CHECK(allowed_domains(o) == std::vector<std::string>{"example.test", "*.wild.test"});
  CHECK_NOTHROW(validate_network_options(o));
  // Only its proxy answers the sandbox's queries.
  CHECK(resolv_conf_for(o, parse_ipv4("10.213.0.1", "x")).find("nameserver 10.213.0.1\n") != std::string::npos);
}

TEST_CASE("network: the DNS proxy forwards allowed names only and fills the allow set") {
  DnsServerConfig c;
  c.listen = parse_ipv4("10.213.0.1", "x");
  c.domains = {"example.test", "*.wild.test"};
  c.upstreams = {"198.51.100.53"};
  c.nft_set = "a-0123456789ab";
  c.refused = {parse_cidr("169.254.0.0/16", "x"), parse_cidr("10.213.0.0/16", "x")};
  c.log_path = "/run/sbx-net/sandboxes/x/dns.log";
  auto a = dns_proxy_args(c);
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  CHECK(has("--listen-address=10.213.0.1"));
  CHECK(has("--no-resolv"));
  CHECK(has("--server=/example.test/198.51.100.53"));
  CHECK(has("--server=/*.wild.test/198.51.100.53"));
  CHECK(has("--nftset=/example.test/4#inet#sbxnet#a-0123456789ab"));
  // Answers that point where no sandbox may go are dropped, and logged.
  CHECK(has("--bogus-nxdomain=169.254.0.0/16"));
  CHECK(has("--bogus-nxdomain=10.213.0.0/16"));
  CHECK(has("--log-facility=/run/sbx-net/sandboxes/x/dns.log"));
  CHECK(has("--log-queries"));
  // root:root: PR_SET_PDEATHSIG survives (a group change would clear it).
  CHECK(has("--group=root"));
  // No catch-all: other names get REFUSED.
  for (const auto& s : a) CHECK_MESSAGE(s.rfind("--address", 0) != 0, s);
  CHECK(!has("--server=198.51.100.53"));
  c.domains.clear();
  c.forward_all = true;
  auto open = dns_proxy_args(c);
  CHECK(std::find(open.begin(), open.end(), "--server=198.51.100.53") != open.end());
}

TEST_CASE("network: the ranges no DNS answer may hand out") {
  auto r = refused_answer_ranges(parse_cidr("203.0.113.128/25", "x"));
  auto has = [&](const std::string& c) {
    for (const auto& p : r)
      if (format_cidr(p) == c) return true;
    return false;
  };
  CHECK(has("169.254.0.0/16"));
  CHECK(has("127.0.0.0/8"));
  CHECK(has("224.0.0.0/3"));
  CHECK(has("203.0.113.128/25"));
}
