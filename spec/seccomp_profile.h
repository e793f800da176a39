// A seccomp profile in runtime-spec terms (config-linux.md "Seccomp"): what
// config.json's linux.seccomp holds, and what sbx's own default profile is
// written as. runtime/linux/seccomp.h builds and loads one (libseccomp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sbx::spec {

/// linux.seccomp.syscalls[].args entry: argument `index` (0..5) compared with `op`.
struct SeccompArg {
  unsigned index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  ///< "SCMP_CMP_EQ", "SCMP_CMP_MASKED_EQ", ...
};

/// linux.seccomp.syscalls entry: `action` for the named system calls (when
/// all `args` on distinct indices match; several on one index: any).
struct SeccompRule {
  std::vector<std::string> names;
  std::string action;  ///< "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ...
  std::optional<unsigned> errno_ret;  ///< for ERRNO / TRACE (default EPERM)
  std::vector<SeccompArg> args;
};

/// linux.seccomp.
struct SeccompProfile {
  std::string default_action;
  std::optional<unsigned> default_errno_ret;
  std::vector<std::string> architectures;  ///< "SCMP_ARCH_X86_64", ...; none: the native one
  std::vector<std::string> flags;          ///< "SECCOMP_FILTER_FLAG_LOG", ...
  std::vector<SeccompRule> syscalls;
};

}  // namespace sbx::spec
