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
  l.veth = "sbx0123456789ab";
  l.address = parse_ipv4("10.213.0.6", "x");
  l.publish = {parse_publish("8080:80"), parse_publish("127.0.0.1:5353:53/udp")};
  spec::NetworkOptions o;

  SUBCASE("no egress rules: only its ports; the table's shared rules cover the rest") {
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("chain") == std::string::npos);
    CHECK(s.find("add element inet sbx pub_tcp_any { 8080 : 10.213.0.6 . 80 }") != std::string::npos);
    CHECK(s.find("add element inet sbx pub_udp { 127.0.0.1 . 5353 : 10.213.0.6 . 53 }") != std::string::npos);
    l.publish.clear();
    CHECK(nft_sandbox_script(l, o).empty());
    std::string t = nft_table_script();
    CHECK(t.find("iifname \"sbx*\" ip daddr { 169.254.0.0/16, 224.0.0.0/4, 255.255.255.255 } goto refuse") !=
          std::string::npos);
    CHECK(t.find("iifname \"sbx*\" oifname \"sbx*\" goto refuse") != std::string::npos);
    CHECK(t.find("add rule inet sbx input iifname \"sbx*\" goto refuse") != std::string::npos);
  }
  SUBCASE("deny only: back to the shared rules after it") {
    o.deny_egress = {"198.51.100.9"};
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("add rule inet sbx e-0123456789ab return") != std::string::npos);
    CHECK(s.find("add rule inet sbx i-0123456789ab goto refuse") != std::string::npos);
    CHECK(s.find("add element inet sbx egress { \"sbx0123456789ab\" : goto e-0123456789ab }") != std::string::npos);
  }
  SUBCASE("an allow list refuses all else; deny is checked first") {
    o.allow_egress = {"198.51.100.0/24"};
    o.deny_egress = {"198.51.100.9"};
    std::string s = nft_sandbox_script(l, o);
    CHECK(s.find("add element inet sbx a-0123456789ab { 198.51.100.0/24 }") != std::string::npos);
    CHECK(s.find("add element inet sbx d-0123456789ab { 198.51.100.9/32 }") != std::string::npos);
    CHECK(s.find("169.254.0.0/16") == std::string::npos);
    size_t deny = s.find("e-0123456789ab ip daddr @d-"), allow = s.find("e-0123456789ab ip daddr @a-"),
           rest = s.find("add rule inet sbx e-0123456789ab goto refuse");
    REQUIRE(deny != std::string::npos);
    CHECK(deny < allow);
    CHECK(allow < rest);
  }
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
  auto a = dns_proxy_args(parse_ipv4("10.213.0.1", "x"), {"example.test", "*.wild.test"}, {"198.51.100.53"},
                          "a-0123456789ab");
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  CHECK(has("--listen-address=10.213.0.1"));
  CHECK(has("--no-resolv"));
  CHECK(has("--server=/example.test/198.51.100.53"));
  CHECK(has("--server=/*.wild.test/198.51.100.53"));
  CHECK(has("--nftset=/example.test/4#inet#sbx#a-0123456789ab"));
  CHECK(a.back() == "--address=/#/");
  // root:root: PR_SET_PDEATHSIG survives (a group change would clear it).
  CHECK(has("--group=root"));
}
