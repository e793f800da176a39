// Changing a running sandbox's memory limit: a warm-pool sandbox made with
// the default limit gets its request's limit when it is taken, before its
// command or its files exist, so that requests with many different limits
// share one pool of sandboxes instead of one pool each.
// Kernel docs: admin-guide/cgroup-v1/memory.rst (memory.limit_in_bytes,
// memory.memsw.limit_in_bytes), admin-guide/cgroup-v2.rst (memory.max,
// memory.swap.max).
#pragma once
#include <cstdint>
#include <string>

namespace sbx::runtime {

/// Sets the memory limit of the native sandbox `sandbox_id` (its cgroup
/// "sbx-<id12>" below the sandboxes' parent, runtime/linux/cgroups.h) to
/// `bytes`, with no swap beyond it (as Cgroup::create: v1 memsw = the
/// limit, v2 swap.max = 0, where swap accounting exists). Raising or
/// lowering: on v1 the files are written in the order the kernel accepts
/// (memory.limit_in_bytes <= memory.memsw.limit_in_bytes at every step).
/// Throws sbx::Error naming the file and value (e.g. EBUSY: the sandbox
/// already uses more than `bytes`; ENOENT: no such sandbox cgroup).
void set_sandbox_memory_limit(const std::string& sandbox_id, int64_t bytes);

}  // namespace sbx::runtime
