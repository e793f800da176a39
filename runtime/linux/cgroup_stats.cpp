#include "runtime/linux/cgroup_stats.h"
#include "runtime/linux/cgroup_hierarchy.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace sbx::runtime {

namespace {

/// The whole of a small file, or nullopt. No throw (no sbx::Error in the hot path).
std::optional<std::string> slurp(const std::string& path) noexcept {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 20)) break;
  }
  ::close(fd);
  return out;
}

/// A file holding one number; "max" (unlimited) and junk give nullopt.
std::optional<uint64_t> number(const std::string& path) noexcept {
  auto s = slurp(path);
  if (!s || s->empty() || !std::isdigit(static_cast<unsigned char>((*s)[0]))) return std::nullopt;
  return std::strtoull(s->c_str(), nullptr, 10);
}

/// "key N" lines (cpu.stat, memory.stat): N of `key`.
std::optional<uint64_t> keyed(const std::string& path, const std::string& key) noexcept {
  auto s = slurp(path);
  if (!s) return std::nullopt;
  std::istringstream in(*s);
  std::string k;
  uint64_t v;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace

CgroupUsage read_cgroup_usage(const std::vector<std::string>& dirs) noexcept {
  CgroupUsage u;
  try {
    for (const auto& d : dirs) {
      // (On v1 only the hierarchy's own controller files are tried.)
      const bool cpu = cgroup_may_have(d, "cpuacct") || cgroup_may_have(d, "cpu");
      const bool mem = cgroup_may_have(d, "memory"), blk = cgroup_may_have(d, "blkio");
      const bool pids = cgroup_may_have(d, "pids");
      if (!u.cpu_ns && cpu) {
        if (auto v = number(d + "/cpuacct.usage")) u.cpu_ns = *v;
        else if (auto us = keyed(d + "/cpu.stat", "usage_usec")) u.cpu_ns = *us * 1000;
      }
      if (!u.memory_bytes && mem) {
        if (auto v = number(d + "/memory.usage_in_bytes")) u.memory_bytes = *v;
        else if (auto v2 = number(d + "/memory.current")) u.memory_bytes = *v2;
      }
      if (!u.memory_peak && mem) {
        if (auto v = number(d + "/memory.max_usage_in_bytes")) u.memory_peak = *v;
        else if (auto v2 = number(d + "/memory.peak")) u.memory_peak = *v2;
      }
      if (!u.memory_limit && mem) {
        // v1 says "unlimited" with a page-rounded LONG_MAX.
        if (auto v = number(d + "/memory.limit_in_bytes"); v && *v < (1ull << 62)) u.memory_limit = *v;
        else if (auto v2 = number(d + "/memory.max")) u.memory_limit = *v2;
      }
      if (!u.io_read_bytes && blk) {
        if (auto s = slurp(d + "/blkio.throttle.io_service_bytes")) {
          // "MAJ:MIN Read N" … "Total N"
          std::istringstream in(*s);
          std::string line;
          uint64_t r = 0, w = 0;
          while (std::getline(in, line)) {
            char dev[64], op[16];
            unsigned long long n;
            if (std::sscanf(line.c_str(), "%63s %15s %llu", dev, op, &n) != 3) continue;
            if (!std::strcmp(op, "Read")) r += n;
            if (!std::strcmp(op, "Write")) w += n;
          }
          u.io_read_bytes = r;
          u.io_write_bytes = w;
        } else if (auto s2 = slurp(d + "/io.stat")) {
          // "MAJ:MIN rbytes=N wbytes=N rios=N …"
          uint64_t r = 0, w = 0;
          std::istringstream in(*s2);
          std::string word;
          while (in >> word) {
            if (word.rfind("rbytes=", 0) == 0) r += std::strtoull(word.c_str() + 7, nullptr, 10);
            if (word.rfind("wbytes=", 0) == 0) w += std::strtoull(word.c_str() + 7, nullptr, 10);
          }
          u.io_read_bytes = r, u.io_write_bytes = w;
        }
      }
      if (!u.pids && pids) u.pids = number(d + "/pids.current");
      if (!u.pids_limit && pids) u.pids_limit = number(d + "/pids.max");
      if (u.procs.empty()) {
        if (auto s = slurp(d + "/cgroup.procs")) {
          std::istringstream in(*s);
          pid_t p;
          while (in >> p) u.procs.push_back(p);
        }
      }
    }
  } catch (...) {
    // Only std::bad_alloc can get here: what was read so far stands.
  }
  return u;
}

uint64_t procs_cpu_ns(const std::vector<pid_t>& pids) noexcept {
  static const long hz = ::sysconf(_SC_CLK_TCK);
  uint64_t ticks = 0, ns = 0;
  for (pid_t p : pids) {
    auto s = slurp("/proc/" + std::to_string(p) + "/stat");
    if (!s) continue;
    // Fields after the last ')' (comm may hold spaces): state is field 3;
    // utime, stime, cutime, cstime are fields 14–17 (proc(5)).
    auto close = s->rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(s->substr(close + 2));
    std::string f;
    uint64_t v[4] = {0, 0, 0, 0};
    for (int field = 3; field <= 17 && in >> f; ++field)
      if (field >= 14) v[field - 14] = std::strtoull(f.c_str(), nullptr, 10);
    // Ticks round a mostly idle process down to 0 (and `docker stats`
    // computes a percentage from two samples): /proc/PID/schedstat's first
    // field is its main thread's run time in ns (CONFIG_SCHED_INFO). The
    // larger of the two: utime+stime also count its other threads.
    uint64_t own = 0;
    if (auto ss = slurp("/proc/" + std::to_string(p) + "/schedstat")) own = std::strtoull(ss->c_str(), nullptr, 10);
    uint64_t own_ticks_ns = hz > 0 ? (v[0] + v[1]) * (1000000000ull / static_cast<uint64_t>(hz)) : 0;
    ns += std::max(own, own_ticks_ns);
    ticks += v[2] + v[3];
  }
  return (hz > 0 ? ticks * (1000000000ull / static_cast<uint64_t>(hz)) : 0) + ns;
}

std::pair<uint64_t, uint64_t> procs_io_bytes(const std::vector<pid_t>& pids) noexcept {
  uint64_t r = 0, w = 0;
  for (pid_t p : pids) {
    auto s = slurp("/proc/" + std::to_string(p) + "/io");
    if (!s) continue;
    std::istringstream in(*s);
    std::string k;
    uint64_t v;
    while (in >> k >> v) {
      if (k == "read_bytes:") r += v;
      if (k == "write_bytes:") w += v;
    }
  }
  return {r, w};
}

ResourceUsage ended_usage(const CgroupUsage& cg, const struct rusage& ru, uint64_t duration_ms) noexcept {
  ResourceUsage u;
  const uint64_t ru_ns = (static_cast<uint64_t>(ru.ru_utime.tv_sec) + static_cast<uint64_t>(ru.ru_stime.tv_sec)) *
                             1000000000ull +
                         (static_cast<uint64_t>(ru.ru_utime.tv_usec) + static_cast<uint64_t>(ru.ru_stime.tv_usec)) * 1000ull;
  u.cpu_ms = (cg.cpu_ns ? *cg.cpu_ns : ru_ns) / 1000000;
  // ru_maxrss (KiB) is the largest single process; the memory cgroup's
  // high-water mark is the whole sandbox's.
  u.max_rss_bytes = cg.memory_peak ? *cg.memory_peak : static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  if (cg.io_read_bytes) {
    u.io_read_bytes = *cg.io_read_bytes;
    u.io_write_bytes = cg.io_write_bytes.value_or(0);
  } else {
    // ru_inblock/ru_oublock count 512-byte blocks (getrusage(2)).
    u.io_read_bytes = static_cast<uint64_t>(ru.ru_inblock) * 512;
    u.io_write_bytes = static_cast<uint64_t>(ru.ru_oublock) * 512;
  }
  u.duration_ms = duration_ms;
  return u;
}

ResourceUsage live_usage(const CgroupUsage& cg, int64_t started_ms) noexcept {
  ResourceUsage u;
  u.cpu_ms = (cg.cpu_ns ? *cg.cpu_ns : procs_cpu_ns(cg.procs)) / 1000000;
  u.max_rss_bytes = cg.memory_peak.value_or(0);
  if (cg.io_read_bytes) {
    u.io_read_bytes = *cg.io_read_bytes;
    u.io_write_bytes = cg.io_write_bytes.value_or(0);
  } else {
    auto [r, w] = procs_io_bytes(cg.procs);
    u.io_read_bytes = r, u.io_write_bytes = w;
  }
  if (started_ms > 0) {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
    if (now > started_ms) u.duration_ms = static_cast<uint64_t>(now - started_ms);
  }
  return u;
}

}  // namespace sbx::runtime
