// Small helpers shared by the unit tests.
#pragma once
#include <doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "common/error.h"
#include "runtime/gvisor/gvisor_backend.h"

namespace sbx::test {

/// A fresh directory /tmp/sbx-PREFIX.XXXXXX, removed with everything under it
/// when the test leaves its scope (tests clean up after themselves).
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "unit") {
    std::string t = "/tmp/sbx-" + prefix + ".XXXXXX";
    REQUIRE(::mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// A well-formed sandbox id (64 hex digits) made of `c` ('a'..'f', '0'..'9').
inline std::string fake_id(char c) { return std::string(64, c); }

/// The runsc for tests that run real gVisor (runtime::find_runsc), or "" after
/// a MESSAGE "skipped: ..." where none is installed (CI installs one).
inline std::string runsc_or_skip() {
  try {
    return runtime::find_runsc("");
  } catch (const Error& e) {
    MESSAGE("skipped: " << e.what());
    return "";
  }
}

/// Debian 12's own runsc (0.0~20221219: no --nvproxy, the exec -t bug), for
/// tests that cover sbx on both runsc releases: $SBX_OLD_RUNSC, else where
/// tests/old_runsc.sh caches it; "" after a MESSAGE "skipped: ..." without one.
inline std::string old_runsc_or_skip() {
  const char* e = std::getenv("SBX_OLD_RUNSC");
  std::string p = e && *e ? e : "/var/cache/sbx-test/runsc-20221219/runsc";
  if (::access(p.c_str(), X_OK) == 0) return p;
  MESSAGE("skipped: no old runsc at " << p << " (run tests/old_runsc.sh as root, or set SBX_OLD_RUNSC)");
  return "";
}

}  // namespace sbx::test
