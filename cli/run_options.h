// Option parsers shared by `sbx run` and `sbx create` (cli/cmd_run.cpp).
#pragma once
#include <string>

#include "runtime/spec.h"

namespace sbx::cli {

/// -v HOST:CTR[:ro,nosuid,nodev,noexec] → a bind mount (host path made
/// absolute with realpath). Throws sbx::Error on a malformed value.
Mount parse_volume(const std::string& text);

/// --tmpfs PATH[:size=64m,mode=1777,exec,…] → a tmpfs mount (podman's
/// defaults nosuid,nodev,noexec first). Throws sbx::Error.
Mount parse_tmpfs(const std::string& text);

}  // namespace sbx::cli
