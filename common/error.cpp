#include "common/error.h"

#include <cstring>

namespace sbx {

const char* error_kind_name(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::Internal: return "Internal";
    case ErrorKind::InvalidArgument: return "InvalidArgument";
    case ErrorKind::NotFound: return "NotFound";
    case ErrorKind::SandboxNotFound: return "SandboxNotFound";
    case ErrorKind::ImageNotFound: return "ImageNotFound";
    case ErrorKind::SnapshotNotFound: return "SnapshotNotFound";
    case ErrorKind::FileNotFound: return "FileNotFound";
    case ErrorKind::Conflict: return "Conflict";
    case ErrorKind::Unsupported: return "Unsupported";
    case ErrorKind::Forbidden: return "Forbidden";
  }
  return "Internal";
}

std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : std::to_string(err);
}

void throw_errno(const std::string& what, int err) {
  throw Error(what + ": " + std::strerror(err) + " (" + errno_name(err) + ")", err);
}

void throw_errno_hint(const std::string& what, const std::string& hint, int err) {
  throw Error(what + ": " + std::strerror(err) + " (" + errno_name(err) + "); " + hint, err);
}

}  // namespace sbx
