// gpu/ldcache: the ld.so.cache reader against caches written by the real
// ldconfig, checked against what `ldconfig -p` itself reads from them.
#include <doctest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "gpu/host_root.h"
#include "gpu/ldcache.h"
#include "test_gpu_fake_tree.h"

using namespace sbx;
using namespace sbx::gpu;

namespace {

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(::popen(cmd.c_str(), "r"), ::pclose);
  std::string out;
  char buf[4096];
  size_t n;
  while (f && (n = std::fread(buf, 1, sizeof buf, f.get())) > 0) out.append(buf, n);
  return out;
}

// "soname => path" pairs as ldconfig -p prints them for the native ABI.
std::set<std::string> ldconfig_p(const std::string& cache) {
  std::set<std::string> out;
  std::istringstream in(run("ldconfig -p -C '" + cache + "'"));
  std::string line;
  while (std::getline(in, line)) {
    auto arrow = line.find(" => ");
    auto paren = line.find(" (");
    if (arrow == std::string::npos || paren == std::string::npos) continue;
#if defined(__x86_64__)
    if (line.find("x86-64") == std::string::npos) continue;
#endif
    auto start = line.find_first_not_of(" \t");
    out.insert(line.substr(start, paren - start) + " => " + line.substr(arrow + 4));
  }
  return out;
}

std::set<std::string> ours(const std::string& cache) {
  std::set<std::string> out;
  for (const auto& e : native_entries(parse_ldcache(fs::read_file(cache), cache))) out.insert(e.soname + " => " + e.path);
  return out;
}

}  // namespace

TEST_CASE("parse_ldcache reads what ldconfig wrote, in the new and the compat format") {
  for (const char* format : {"new", "compat"}) {
    CAPTURE(format);
    sbx::test::FakeNvidiaTree t;
    t.library("/usr/lib/x86_64-linux-gnu", "libcuda.so", "550.54.15");
    t.library("/usr/lib/x86_64-linux-gnu", "libnvidia-ml.so", "550.54.15");
    t.library("/opt/other", "libfoo.so", "2.0");
    t.ldconfig({"/usr/lib/x86_64-linux-gnu", "/opt/other"}, format);
    auto all = parse_ldcache(fs::read_file(t.p("/etc/ld.so.cache")), "cache");
    auto native = native_entries(all);
    std::set<std::string> got;
    for (const auto& e : native) got.insert(e.soname + " => " + e.path);
    CHECK(got == std::set<std::string>{"libcuda.so.1 => /usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                       "libnvidia-ml.so.1 => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                                       "libfoo.so.1 => /opt/other/libfoo.so.1"});
    CHECK(got == ldconfig_p(t.p("/etc/ld.so.cache")));
    // The soname link ldconfig made resolves, inside the root, to the versioned file.
    CHECK(HostRoot{t.root}.resolve("/usr/lib/x86_64-linux-gnu/libcuda.so.1") ==
          "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  }
}

TEST_CASE("parse_ldcache agrees with ldconfig -p on this host's own cache") {
  if (!fs::exists("/etc/ld.so.cache")) return;
  auto expected = ldconfig_p("/etc/ld.so.cache");
  REQUIRE(!expected.empty());
  CHECK(ours("/etc/ld.so.cache") == expected);
}

TEST_CASE("parse_ldcache rejects garbage and truncated caches") {
  CHECK_THROWS_AS(parse_ldcache("hello world, not a cache at all, really not", "x"), Error);
  CHECK_THROWS_AS(parse_ldcache("", "x"), Error);
  sbx::test::FakeNvidiaTree t;
  t.library("/usr/lib", "libcuda.so", "1.0");
  t.ldconfig({"/usr/lib"});
  std::string data = fs::read_file(t.p("/etc/ld.so.cache"));
  CHECK(parse_ldcache(data, "x").size() >= 1);
  CHECK_THROWS_AS(parse_ldcache(data.substr(0, 60), "x"), Error);  // header says more entries than there are
  std::string bad = data;
  bad[17] = '9';  // version "9.1"
  CHECK_THROWS_AS(parse_ldcache(bad, "x"), Error);
}

TEST_CASE("HostRoot joins and resolves links inside the root") {
  CHECK(HostRoot{"/"}.join("/dev/nvidia0") == "/dev/nvidia0");
  CHECK(HostRoot{"/tmp/x/"}.join("/dev/nvidia0") == "/tmp/x/dev/nvidia0");
  sbx::test::FakeNvidiaTree t;
  t.write("/usr/lib/real.so.1", "x");
  std::filesystem::create_symlink("/usr/lib/real.so.1", t.p("/usr/lib/abs.so"));  // absolute: stays in the root
  std::filesystem::create_symlink("../lib/abs.so", t.p("/usr/lib/rel.so"));
  std::filesystem::create_symlink("loop", t.p("/usr/lib/loop"));
  HostRoot r{t.root};
  CHECK(r.resolve("/usr/lib/abs.so") == "/usr/lib/real.so.1");
  CHECK(r.resolve("/usr/lib/rel.so") == "/usr/lib/real.so.1");
  CHECK(r.resolve("/usr/../../../usr/lib/real.so.1") == "/usr/lib/real.so.1");
  CHECK(r.resolve("/usr/lib/missing") == "");
  CHECK(r.resolve("/usr/lib/loop") == "");
}

TEST_CASE("parse_ldcache never reads outside the data: every truncation and random byte flips") {
  sbx::test::FakeNvidiaTree t;
  t.library("/usr/lib", "libcuda.so", "1.0");
  t.library("/usr/lib", "libnvidia-ml.so", "1.0");
  for (const char* format : {"new", "compat"}) {
    t.ldconfig({"/usr/lib"}, format);
    const std::string data = fs::read_file(t.p("/etc/ld.so.cache"));
    size_t ok = 0, rejected = 0;
    auto attempt = [&](const std::string& d) {
      try {
        parse_ldcache(d, "x");
        ++ok;
      } catch (const Error&) {
        ++rejected;
      }
    };
    for (size_t n = 0; n <= data.size(); ++n) attempt(data.substr(0, n));
    std::mt19937 rng(42);
    for (int i = 0; i < 2000; ++i) {
      std::string d = data;
      for (int k = 0; k < 3; ++k) d[rng() % d.size()] = static_cast<char>(rng());
      attempt(d);
    }
    CHECK(ok > 0);
    CHECK(rejected > 0);
  }
}
