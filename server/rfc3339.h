// Times on the wire of sbx serve's APIs (Docker's Created/StartedAt, E2B's
// startedAt/endAt, file mtimes): RFC 3339 in UTC, as every API answers them.
#pragma once
#include <cstdint>
#include <string>

namespace sbx::server {

/// RFC 3339 with milliseconds, UTC ("2026-11-27T10:12:00.123Z"), from unix
/// ms; "0001-01-01T00:00:00Z" (Go's zero time, as Docker answers) for 0 or
/// below. Spec: RFC 3339 section 5.6.
std::string rfc3339(int64_t unix_ms);

}  // namespace sbx::server
