// Option parsers shared by `sbx run` and `sbx create` (cli/cmd_run.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "runtime/spec.h"

namespace sbx::cli {

/// -v HOST:CTR[:ro,nosuid,nodev,noexec] → a bind mount (host path made
/// absolute with realpath). Throws sbx::Error on a malformed value.
Mount parse_volume(const std::string& text);

/// --tmpfs PATH[:size=64m,mode=1777,exec,…] → a tmpfs mount (podman's
/// defaults nosuid,nodev,noexec first). Throws sbx::Error.
Mount parse_tmpfs(const std::string& text);

/// --disk SIZE ("512m", "2g", bytes) → bytes for SandboxSpec::disk_bytes.
/// Throws sbx::Error on a malformed or zero size, or one below 1 MiB (an
/// overlay needs room for its work dir and the sandbox for its mount points).
uint64_t parse_disk(const std::string& text);

/// The --disk help text shared by run and create.
extern const char* const kDiskHelp;

}  // namespace sbx::cli
