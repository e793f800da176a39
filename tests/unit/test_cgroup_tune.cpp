// runtime/linux/cgroup_tune.h and cgroup_stats.h: parsing, on fake files.
#include <doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/linux/cgroup_stats.h"
#include "runtime/linux/cgroup_tune.h"

using namespace sbx::runtime;

namespace {
std::string temp_dir() {
  char tmpl[] = "/tmp/sbx-unit-cgtune.XXXXXX";
  return ::mkdtemp(tmpl);
}
void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
}  // namespace

TEST_CASE("cgroup2_mount finds the cgroup2 mount and its favordynmods") {
  std::string d = temp_dir();
  put(d + "/mounts",
      "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,relatime,nsdelegate,favordynmods 0 0\n");
  auto m = cgroup2_mount(d + "/mounts");
  REQUIRE(m);
  CHECK(m->path == "/sys/fs/cgroup/unified");
  CHECK(m->favordynmods);
  // The cgroup2 options are kept, per-mount flags and favordynmods dropped or added.
  CHECK(cgroup2_remount_options(*m, false) == "nsdelegate");
  CHECK(cgroup2_remount_options(*m, true) == "nsdelegate,favordynmods");
  put(d + "/mounts", "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n");
  CHECK_FALSE(cgroup2_mount(d + "/mounts"));
  (void)!std::system(("rm -rf " + d).c_str());
}

TEST_CASE("read_cgroup_usage reads v1 and v2 accounting files") {
  std::string v1 = temp_dir(), v2 = temp_dir();
  put(v1 + "/memory.usage_in_bytes", "1000\n");
  put(v1 + "/memory.max_usage_in_bytes", "5000\n");
  put(v1 + "/memory.limit_in_bytes", "9223372036854771712\n");  // unlimited
  put(v1 + "/blkio.throttle.io_service_bytes", "8:0 Read 4096\n8:0 Write 512\n8:0 Total 4608\nTotal 4608\n");
  auto u = read_cgroup_usage({v1});
  CHECK(u.memory_bytes == 1000u);
  CHECK(u.memory_peak == 5000u);
  CHECK_FALSE(u.memory_limit);
  CHECK(u.io_read_bytes == 4096u);
  CHECK(u.io_write_bytes == 512u);
  CHECK_FALSE(u.cpu_ns);
  put(v2 + "/cpu.stat", "usage_usec 376000\nuser_usec 300000\n");
  put(v2 + "/memory.peak", "70000000\n");
  put(v2 + "/memory.max", "max\n");
  put(v2 + "/io.stat", "8:0 rbytes=100 wbytes=200 rios=1 wios=2\n8:16 rbytes=1 wbytes=2\n");
  auto w = read_cgroup_usage({v2});
  CHECK(w.cpu_ns == 376000000u);
  CHECK(w.memory_peak == 70000000u);
  CHECK_FALSE(w.memory_limit);
  CHECK(w.io_read_bytes == 101u);
  CHECK(w.io_write_bytes == 202u);
  // ended_usage: the cgroup's numbers win; rusage fills the rest.
  struct rusage ru {};
  ru.ru_utime.tv_sec = 1;
  ru.ru_maxrss = 100;  // KiB
  ru.ru_inblock = 2;
  auto e1 = ended_usage(u, ru, 42);
  CHECK(e1.cpu_ms == 1000);
  CHECK(e1.max_rss_bytes == 5000);
  CHECK(e1.io_read_bytes == 4096);
  CHECK(e1.duration_ms == 42);
  auto e2 = ended_usage(CgroupUsage{}, ru, 1);
  CHECK(e2.max_rss_bytes == 100 * 1024);
  CHECK(e2.io_read_bytes == 1024);
  (void)!std::system(("rm -rf " + v1 + " " + v2).c_str());
}

// runtime/linux/cgroup_hierarchy.h: which v1 hierarchy holds which controller's files.
#include "runtime/linux/cgroup_hierarchy.h"

TEST_CASE("cgroup_may_have: a v1 hierarchy holds its own controllers' files only") {
  CHECK(cgroup_may_have("/sys/fs/cgroup/memory/sbx/sbx-0123456789ab", "memory"));
  CHECK_FALSE(cgroup_may_have("/sys/fs/cgroup/memory/sbx/sbx-0123456789ab", "pids"));
  CHECK_FALSE(cgroup_may_have("/sys/fs/cgroup/pids/sbx-0123456789ab", "memory"));
  CHECK(cgroup_may_have("/sys/fs/cgroup/pids/sbx-0123456789ab", "pids"));
  CHECK(cgroup_may_have("/sys/fs/cgroup/cpu,cpuacct/sbx-x", "cpuacct"));
  CHECK(cgroup_may_have("/sys/fs/cgroup/cpu,cpuacct/sbx-x", "cpu"));
  CHECK_FALSE(cgroup_may_have("/sys/fs/cgroup/cpu,cpuacct/sbx-x", "memory"));
  CHECK_FALSE(cgroup_may_have("/sys/fs/cgroup/devices/sbx-x", "blkio"));
  CHECK_FALSE(cgroup_may_have("/sys/fs/cgroup/systemd/sbx-x", "memory"));
  // cgroup v2 (one hierarchy for all), the hybrid's unified one, other paths: anything may be there.
  CHECK(cgroup_may_have("/sys/fs/cgroup/unified/sbx-x", "memory"));
  CHECK(cgroup_may_have("/sys/fs/cgroup/sbx/sbx-x", "memory"));
  CHECK(cgroup_may_have("/sys/fs/cgroup/system.slice/sbx-x", "pids"));
  CHECK(cgroup_may_have("/tmp/fake-cgroup", "memory"));
}
