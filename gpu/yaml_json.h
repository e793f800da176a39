// YAML 1.1 text to a JSON value (via libyaml's document loader), so CDI specs
// in YAML and JSON go through one parser. Plain scalars become numbers, bools
// or null by YAML 1.1 core-schema rules (123, 0x1b, 0o644, true/false, null/~);
// quoted scalars stay strings; aliases are followed (bounded depth).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace sbx::gpu {

/// Parses the first YAML document of `text`. Throws sbx::Error naming `what`
/// and the line/column libyaml reports on a syntax error, or on nesting
/// deeper than 64 levels.
nlohmann::json yaml_to_json(std::string_view text, const std::string& what);

}  // namespace sbx::gpu
