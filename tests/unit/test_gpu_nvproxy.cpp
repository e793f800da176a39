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
