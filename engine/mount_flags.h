// The -v NAME:/PATH and --mount flags as spec::Mounts (engine/volumes.h
// declares the parsers), and the bind of a host directory that a --mount
// type=bind and a bind volume (type=none o=bind device=) both make.
#pragma once
#include <string>

#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// A bind of the host directory `host_dir` on `dst` (read-only with `ro`),
/// by its real path (realpath(3): what is bound is what the path names now,
/// not a link that may change later). Throws sbx::Error naming `what`, with
/// `hint` when there is one, when the directory cannot be resolved.
spec::Mount host_dir_bind(const std::string& dst, const std::string& host_dir, bool ro, const std::string& what,
                          const std::string& hint = "");

}  // namespace sbx::engine
