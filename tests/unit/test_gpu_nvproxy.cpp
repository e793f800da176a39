// gpu/nvproxy: does the installed runsc support --nvproxy?
#include <doctest.h>
#include <unistd.h>

#include "common/error.h"
#include "gpu/nvproxy.h"

using namespace sbx;
using namespace sbx::gpu;

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

TEST_CASE("runsc_supports_nvproxy runs the real runsc (Debian 12's 2022 release has no nvproxy)") {
  if (::access("/usr/bin/runsc", X_OK) != 0) return;  // runsc is in .ci/packages; absent only off CI
  CHECK(!runsc_supports_nvproxy("/usr/bin/runsc"));
  try {
    require_nvproxy("/usr/bin/runsc");
    FAIL("require_nvproxy should have thrown");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("needs runsc with nvproxy support") != std::string::npos);
    CHECK(std::string(e.what()).find("runsc version") != std::string::npos);
  }
  CHECK_THROWS_AS(runsc_supports_nvproxy("/nonexistent/runsc"), Error);
}
