// Error kinds → wire statuses (server/error_status.h).
#include "server/error_status.h"

#include <cerrno>

namespace sbx::server {

namespace {

/// The kind, with an unkinded ENOENT counted as a missing file.
ErrorKind effective_kind(const Error& e) noexcept {
  if (e.kind() == ErrorKind::Internal && e.err() == ENOENT) return ErrorKind::FileNotFound;
  return e.kind();
}

int http_status(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::NotFound:
    case ErrorKind::SandboxNotFound:
    case ErrorKind::ImageNotFound:
    case ErrorKind::SnapshotNotFound:
    case ErrorKind::FileNotFound: return 404;
    case ErrorKind::InvalidArgument:
    case ErrorKind::Unsupported: return 400;
    case ErrorKind::Conflict: return 409;
    case ErrorKind::Forbidden: return 403;
    case ErrorKind::Internal: return 500;
  }
  return 500;
}

}  // namespace

int docker_status(const Error& e) noexcept { return http_status(e.kind()); }

V1Status v1_status(const Error& e) noexcept {
  ErrorKind k = effective_kind(e);
  return {http_status(k), k};
}

int e2b_status(const Error& e) noexcept { return http_status(e.kind()); }

const char* connect_code(const Error& e) noexcept {
  switch (http_status(effective_kind(e))) {
    case 404: return "not_found";
    case 400: return "invalid_argument";
    case 409: return "failed_precondition";
    case 403: return "permission_denied";
    default: return "internal";
  }
}

}  // namespace sbx::server
