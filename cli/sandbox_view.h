// How the CLI shows sandboxes: ps's table and --format, inspect's JSON, and
// the small helpers the sandbox verbs share (cmd_ps, cmd_inspect, cmd_rm, …).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/state.h"

namespace sbx::cli {

/// `ms` (epoch ms) as RFC 3339 UTC with milliseconds; "" for 0.
std::string rfc3339(int64_t ms);
/// How long since `ms` (epoch ms), as docker words it: "2 seconds", "1 minute".
std::string since(int64_t ms);
/// since(ms) + " ago"; "" for 0.
std::string ago(int64_t ms);
/// Prints ROWS (the first is the header) as columns padded to their widest
/// cell plus 3 spaces; the last column is not padded.
void print_table(const std::vector<std::vector<std::string>>& rows);
/// ps's STATUS: "Up 2 seconds", "Exited (124) timeout 1 second ago", …
std::string status_text(const runtime::SandboxInfo& i);
/// inspect's (full) or ps --json's document of one sandbox; with `root`
/// (sbx's store) also its bind and volume Mounts (Docker's MountPoint shape).
nlohmann::json info_json(const runtime::SandboxInfo& i, bool full, const std::string& root = "");
/// `ps --format TEMPLATE`: each {{.Field}} replaced (podman's names where
/// podman has them; the accounting as in inspect's State). Throws sbx::Error
/// on an unknown field.
std::string format_sandbox(const std::string& tmpl, const runtime::SandboxInfo& i, bool no_trunc);
/// The sandboxes (running ones, or all) matching FILTERS (label=, name=, status=, id=).
std::vector<runtime::SandboxInfo> list(const Globals& g, bool all, const std::vector<std::string>& filters);
/// The full ids of REFS (ids, prefixes, names); throws sbx::Error for one that names none.
std::vector<std::string> resolve_all(const Globals& g, const std::vector<std::string>& refs);

}  // namespace sbx::cli
