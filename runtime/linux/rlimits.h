// Resource limits (setrlimit(2)) for the sandboxed process: --ulimit.
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// Parses docker's --ulimit "nofile=1024:2048" / "nproc=512" ("unlimited" or
/// -1 for no limit) into a config.json rlimit. Throws sbx::Error on junk.
Rlimit parse_ulimit(const std::string& text);

/// Lowers limits that exceed the current hard limit to it (raising a hard
/// limit needs CAP_SYS_RESOURCE, which sbx may not have). Returns one warning
/// sentence per clamped limit. Run in the parent, before the sandbox starts.
std::vector<std::string> clamp_rlimits(std::vector<Rlimit>& limits);

/// Checks one config.json rlimit (runtime-spec config.md "POSIX process"):
/// its type must name a setrlimit(2) resource ("RLIMIT_NOFILE"), and soft
/// must not exceed hard (the kernel refuses it). Throws sbx::Error (EINVAL)
/// naming the type.
void check_rlimit(const Rlimit& r);

/// Applies the limits to the calling process (the workload, before exec).
/// Throws sbx::Error naming the limit.
void apply_rlimits(const std::vector<Rlimit>& limits);

}  // namespace sbx::runtime
