// Finding CRIU (runtime/native/criu.h): $SBX_CRIU, sbx's own prefix, PATH;
// what `criu check` says, and the line `sbx info` prints of it.
#include <doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/native/criu.h"
#include "runtime/native/criu_image.h"
#include "test_util.h"

using namespace sbx;

namespace {

/// Sets an environment variable for one scope.
struct EnvVar {
  std::string name, old;
  bool had;
  EnvVar(const char* n, const char* v) : name(n) {
    const char* o = ::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    ::setenv(n, v, 1);
  }
  ~EnvVar() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("find_criu: $SBX_CRIU wins, and a path that is not executable finds nothing") {
  {
    EnvVar e("SBX_CRIU", "/bin/true");
    CHECK(runtime::find_criu() == "/bin/true");
  }
  {
    EnvVar e("SBX_CRIU", "/nonexistent/criu");
    CHECK(runtime::find_criu().empty());
  }
  // Without it: sbx's own prefix before PATH.
  const std::string own = std::string(runtime::kCriuPrefix) + "/sbin/criu";
  if (::access(own.c_str(), X_OK) == 0) CHECK(runtime::find_criu() == own);
}

TEST_CASE("describe_criu says what was found or why not") {
  runtime::CriuInfo none;
  none.error = "CRIU is not installed";
  CHECK(runtime::describe_criu(none) == "memory snapshots: no (CRIU is not installed)");
  runtime::CriuInfo ok;
  ok.path = "/usr/local/lib/sbx/criu/sbin/criu";
  ok.version = "4.1.1";
  ok.works = true;
  ok.features = {{"uffd-noncoop", true}, {"mem_dirty_track", false}, {"timens", true}};
  CHECK(runtime::describe_criu(ok) ==
        "memory snapshots: CRIU 4.1.1 at /usr/local/lib/sbx/criu/sbin/criu (timens, uffd-noncoop)");
}

TEST_CASE("criu_info on this host: CRIU 4.1 from sbx's prefix passes criu check") {
  const std::string own = std::string(runtime::kCriuPrefix) + "/sbin/criu";
  if (::access(own.c_str(), X_OK) != 0 || ::getenv("SBX_CRIU")) {
    MESSAGE("no CRIU in " << own << " (.ci/criu-build.sh builds it): skipped");
    return;
  }
  const runtime::CriuInfo& i = runtime::criu_info();
  CHECK(i.path == own);
  CHECK(i.version.rfind("4.", 0) == 0);
  CHECK_MESSAGE(i.works, i.error);
  CHECK(i.features.count("uffd-noncoop") == 1);
  // The refusal names the CRIU it found, and still points to gVisor.
  CHECK_THROWS_WITH_AS(runtime::fail_native_checkpoint(), doctest::Contains(own.c_str()), Error);
}

namespace {

// userns-13.img as `criu dump` (4.1.1) wrote it for a process in a user
// namespace mapping ids 0..65535 to host 3000000000.. (uid and gid).
const unsigned char kUsernsImg[] = {0x19, 0x43, 0x56, 0x54, 0x06, 0x49, 0x47, 0x55, 0x1c, 0x00, 0x00, 0x00,
                                    0x0a, 0x0c, 0x08, 0x00, 0x10, 0x80, 0xbc, 0xc1, 0x96, 0x0b, 0x18, 0x80,
                                    0x80, 0x04, 0x12, 0x0c, 0x08, 0x00, 0x10, 0x80, 0xbc, 0xc1, 0x96, 0x0b,
                                    0x18, 0x80, 0x80, 0x04};

std::string real_image() { return std::string(reinterpret_cast<const char*>(kUsernsImg), sizeof kUsernsImg); }

}  // namespace

TEST_CASE("CRIU userns image: parse what criu dump wrote, and encode it back byte for byte") {
  auto m = runtime::parse_criu_userns_image(real_image());
  REQUIRE(m.uid.size() == 1);
  REQUIRE(m.gid.size() == 1);
  CHECK(m.uid[0].first == 0);
  CHECK(m.uid[0].lower_first == 3000000000u);
  CHECK(m.uid[0].count == 65536);
  CHECK(m.gid[0].lower_first == 3000000000u);
  CHECK(runtime::encode_criu_userns_image(m) == real_image());
}

TEST_CASE("CRIU userns image: damaged bytes are refused") {
  std::string b = real_image();
  CHECK_THROWS_AS(runtime::parse_criu_userns_image(b.substr(0, 20)), Error);  // truncated
  std::string bad = b;
  bad[4] = 0;  // another image's magic
  CHECK_THROWS_WITH_AS(runtime::parse_criu_userns_image(bad), doctest::Contains("wrong magic"), Error);
  std::string noext = b.substr(0, 8) + std::string("\x04\x00\x00\x00\x0a\x02\x08\x00", 8);  // extent lacks fields
  CHECK_THROWS_AS(runtime::parse_criu_userns_image(noext), Error);
}

TEST_CASE("remap_criu_userns_images gives a restored copy host ids of its own") {
  test::TempDir t;
  const std::string dir = t.path;
  fs::write_file_atomic(dir + "/userns-13.img", real_image(), 0600);
  // A nested namespace's extents are relative to its parent: not moved.
  runtime::CriuUsernsMaps nested;
  nested.uid = nested.gid = {{0, 1000, 10}};
  fs::write_file_atomic(dir + "/userns-14.img", runtime::encode_criu_userns_image(nested), 0600);
  fs::write_file_atomic(dir + "/pages-1.img", "not touched", 0600);

  CHECK(runtime::remap_criu_userns_images(dir, 3000000000u, 3000065536u, 65536) == 2);
  auto m = runtime::parse_criu_userns_image(fs::read_file(dir + "/userns-13.img"));
  CHECK(m.uid[0].lower_first == 3000065536u);
  CHECK(m.gid[0].lower_first == 3000065536u);
  CHECK(m.uid[0].first == 0);
  CHECK(m.uid[0].count == 65536);
  CHECK(runtime::parse_criu_userns_image(fs::read_file(dir + "/userns-14.img")).uid[0].lower_first == 1000);
  CHECK(fs::read_file(dir + "/pages-1.img") == "not touched");

  // An extent that straddles the range is an error, not a half-move.
  runtime::CriuUsernsMaps straddle;
  straddle.uid = straddle.gid = {{0, 2999999999u, 10}};
  fs::write_file_atomic(dir + "/userns-13.img", runtime::encode_criu_userns_image(straddle), 0600);
  CHECK_THROWS_WITH_AS(runtime::remap_criu_userns_images(dir, 3000000000u, 3000065536u, 65536),
                       doctest::Contains("partly outside"), Error);
  CHECK_THROWS_AS(runtime::remap_criu_userns_images(dir + "/missing", 0, 1, 1), Error);
}

TEST_CASE("criu_spec_blocker: GPUs are refused with the reason, a plain sandbox is not") {
  SandboxSpec plain;
  CHECK(runtime::criu_spec_blocker(plain).empty());
  SandboxSpec gpu;
  DeviceNode nv;
  nv.path = "/dev/nvidia0";
  nv.major = 195;
  gpu.devices.push_back(nv);
  CHECK(runtime::criu_spec_blocker(gpu).find("/dev/nvidia0") != std::string::npos);
  CHECK(runtime::criu_spec_blocker(gpu).find("GPU state") != std::string::npos);
  SandboxSpec libs;
  libs.ldconfig_dirs = {"/usr/lib/x86_64-linux-gnu/nvidia"};
  CHECK_FALSE(runtime::criu_spec_blocker(libs).empty());
}
