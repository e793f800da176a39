// SandboxSpec <-> JSON with every field, for handing a spec to another sbx
// process: the fresh helper that a multithreaded sbx (sbx serve) execs to
// start or enter a sandbox (runtime/linux/self_exec.h). It is sbx's own,
// internal shape, read back by the same binary that wrote it: not a file
// format (that is config.json, oci/runtime_config.h, which has no place for
// some fields, e.g. layer_dirs or the network options).
#pragma once
#include <nlohmann/json.hpp>

#include "spec/sandbox_spec.h"

namespace sbx::spec {

/// Every field of `p` as a JSON object. No throw but std::bad_alloc.
nlohmann::json process_to_json(const Process& p);

/// The Process that process_to_json wrote. Throws sbx::Error naming the field
/// when `j` lacks one or has the wrong type.
Process process_from_json(const nlohmann::json& j);

/// Every field of `s` as a JSON object. No throw but std::bad_alloc.
nlohmann::json spec_to_json(const SandboxSpec& s);

/// The SandboxSpec that spec_to_json wrote. Throws sbx::Error naming the
/// field when `j` lacks one or has the wrong type.
SandboxSpec spec_from_json(const nlohmann::json& j);

}  // namespace sbx::spec
