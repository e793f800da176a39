#include "common/error.h"

#include <cstring>

namespace sbx {

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
