// runtime/gvisor/nvproxy and runtime/gvisor/runsc_features: what the found runsc can do.
// The real-binary cases run both releases sbx supports: the current one from
// bookworm-backports (on $PATH after tests/setup.sh) and Debian 12's own
// (tests/old_runsc.sh); each is skipped with a printed reason when absent.
#include <doctest.h>
#include <unistd.h>

#include "common/error.h"
#include "runtime/gvisor/nvproxy.h"
#include "runtime/gvisor/runsc_features.h"
#include "test_util.h"

using namespace sbx;
using namespace sbx::runtime;

namespace {
// Excerpts of `runsc flags` as the two releases print them.
const char* kFlags20240729 =
    "  -network string\n    \tnetworking type (default \"sandbox\")\n  -nvproxy\n"
    "    \tEXPERIMENTAL: enable support for Nvidia GPUs\n  -nvproxy-docker docker run --gpus\n    \tDEPRECATED\n"
    "  -overlay2 value\n    \twrap mounts with overlayfs. Format is {mount}:{medium}, where 'mount' can be 'root' or "
    "'all' and medium can be 'memory', 'self' or 'dir=/abs/dir/path' in which filestore will be created. 'none' "
    "will turn overlay mode off. (default root:self)\n  -panic-log string\n    \tfile path, size=irrelevant here\n";
const char* kFlags20221219 =
    "  -network string\n    \tnetworking type (default \"sandbox\")\n  -overlay2 value\n    \twrap mounts with "
    "overlayfs. Format is {mount}:{medium}, where 'mount' can be 'root' or 'all' and medium can be 'memory' or "
    "existing directory path in which filestore will be created. 'none' will turn overlay mode off.\n";
}  // namespace

TEST_CASE("runsc_output_has_nvproxy finds the flag, not look-alikes") {
  // As printed by `runsc flags` of gVisor releases with nvproxy (2023+).
  CHECK(runsc_output_has_nvproxy("  -network string\n\tnetworking type (default \"sandbox\")\n  -nvproxy\n"
                                 "\tEXPERIMENTAL: enable support for Nvidia GPUs\n  -nvproxy-docker\n\tDEPRECATED\n"));
  CHECK(runsc_output_has_nvproxy("--nvproxy  enable nvproxy"));
  CHECK(!runsc_output_has_nvproxy("  -nvproxy-docker\n\tthe docker thing\n"));
  CHECK(!runsc_output_has_nvproxy("  -network string\n  -overlay\n"));
  CHECK(!runsc_output_has_nvproxy("the word nvproxy in prose"));
  CHECK(!runsc_output_has_nvproxy(""));
}

TEST_CASE("parse_runsc_features: release, nvproxy, overlay size, exec tty") {
  using runtime::parse_runsc_features;
  auto n = parse_runsc_features("runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n", kFlags20240729);
  CHECK(n.version == "runsc version 0.0~20240729.0");
  CHECK(n.release == 20240729);
  CHECK(n.nvproxy);
  CHECK(!n.overlay_size);  // "size=" in another flag's help does not count
  CHECK(!n.exec_tty);      // 20240729 still loses exec -t output without a terminal (kExecTtyRelease)
  auto o = parse_runsc_features("runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n", kFlags20221219);
  CHECK(o.release == 20221219);
  CHECK(!o.nvproxy);
  CHECK(!o.overlay_size);
  CHECK(!o.exec_tty);
  // An upstream build names its release differently; a later one documents size=.
  auto u = parse_runsc_features("runsc version release-20250512.0\n",
                                "  -overlay2 value\n    \tFormat is {mount}:{medium}[,size={size}]\n  -pprof\n");
  CHECK(u.release == 20250512);
  CHECK(u.overlay_size);
  CHECK(parse_runsc_features("runsc version dev\n", "").release == 0);
  CHECK(!parse_runsc_features("runsc version dev\n", "").exec_tty);
  CHECK(runtime::describe_runsc_features(n) == "nvproxy yes, overlay-size no, exec-tty no");
  CHECK(runtime::describe_runsc_features(u) == "nvproxy no, overlay-size yes, exec-tty no");
}

TEST_CASE("runsc features of the real binaries: current (backports) and Debian 12's own") {
  std::string cur = test::runsc_or_skip();
  if (!cur.empty()) {
    auto f = runtime::runsc_features(cur);
    MESSAGE("runsc on $PATH: " << f.version << " (" << runtime::describe_runsc_features(f) << ")");
    CHECK(f.release != 0);
    CHECK(f.nvproxy == (f.release >= 20230101));  // nvproxy landed in 2023
    CHECK(runsc_supports_nvproxy(cur) == f.nvproxy);
    if (f.nvproxy) CHECK_NOTHROW(require_nvproxy(cur));
    // Cached: the same answer without a second probe.
    CHECK(runtime::runsc_features(cur).version == f.version);
  }
  std::string old = test::old_runsc_or_skip();
  if (!old.empty()) {
    auto f = runtime::runsc_features(old);
    CHECK(f.release == 20221219);
    CHECK(!f.nvproxy);
    CHECK(!f.exec_tty);
    CHECK(!runsc_supports_nvproxy(old));
    try {
      require_nvproxy(old);
      FAIL("require_nvproxy should have thrown");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("needs runsc with nvproxy support") != std::string::npos);
      CHECK(std::string(e.what()).find("runsc version 0.0~20221219") != std::string::npos);
      CHECK(std::string(e.what()).find("bookworm-backports") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(runsc_supports_nvproxy("/nonexistent/runsc"), Error);
  CHECK_THROWS_AS(runtime::runsc_features("/nonexistent/runsc"), Error);
  CHECK_THROWS_WITH_AS(runtime::runsc_features("/bin/true"), doctest::Contains("is it gVisor's runsc"), Error);
}

TEST_CASE("nvproxy's driver list: parsed, ordered, and a host driver outside it refused before the start") {
  // As `runsc nvproxy list-supported-drivers` of 0.0~20240729.0 prints it (unordered).
  auto v = runtime::parse_nvproxy_drivers("535.161.07\n550.54.14\n550.90.07\n535.104.12\n550.100.01\n\n"
                                          "unknown subcommand\n1.2..3\n 535.104.05 \n");
  REQUIRE(v.size() == 6);
  CHECK(v.front() == "535.104.05");
  CHECK(v.back() == "550.100.01");  // numeric order: 100 > 90
  CHECK(v[4] == "550.90.07");
  CHECK(runtime::parse_nvproxy_drivers("Usage: runsc <flags> <subcommand>\n").empty());
  runtime::RunscFeatures f;
  f.nvproxy = true;
  CHECK(runtime::nvproxy_supports_driver(f, "580.159.04"));  // list unknown: not refused
  f.nvproxy_drivers = v;
  CHECK(runtime::nvproxy_supports_driver(f, "550.90.07"));
  CHECK(!runtime::nvproxy_supports_driver(f, "580.159.04"));
  CHECK(runtime::nvproxy_supports_driver(f, ""));
  CHECK(runtime::describe_runsc_features(f) == "nvproxy yes (drivers up to 550.100.01), overlay-size no, exec-tty no");

  std::string cur = test::runsc_or_skip();
  if (cur.empty()) return;
  auto real = runtime::runsc_features(cur);
  if (!real.nvproxy) return;
  MESSAGE("nvproxy of " << real.version << " knows " << real.nvproxy_drivers.size() << " drivers");
  if (real.release >= 20240101) CHECK(!real.nvproxy_drivers.empty());  // the subcommand exists since 2023
  if (real.nvproxy_drivers.empty()) return;
  CHECK_NOTHROW(require_nvproxy(cur, real.nvproxy_drivers.back()));
  // The H200 host this was first run on had 580.159.04, which 20240729 does not know.
  CHECK_THROWS_WITH_AS(require_nvproxy(cur, "999.1.1"),
                       doctest::Contains("does not support this host's NVIDIA driver 999.1.1"), Error);
}
