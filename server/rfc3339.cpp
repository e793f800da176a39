// RFC 3339 times for the APIs (server/rfc3339.h).
#include "server/rfc3339.h"

#include <cstdio>
#include <ctime>

namespace sbx::server {

std::string rfc3339(int64_t ms) {
  if (ms <= 0) return "0001-01-01T00:00:00Z";
  time_t s = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  ::gmtime_r(&s, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

}  // namespace sbx::server
