// The backend registry: the one place that maps the names users type
// (--runtime NAME, state.json "runtime") to runtime/backend.h implementations.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace sbx::runtime {

/// The names of every backend ("native" first: the default).
const std::vector<std::string>& backend_names();

/// Throws sbx::Error "invalid --runtime 'NAME': use native or gvisor" unless
/// `name` is a backend's name.
void validate_backend_name(const std::string& name);

/// The backend called `name`. Throws as validate_backend_name.
std::unique_ptr<Backend> backend_for(const std::string& name, const BackendOptions& opts = {});

/// The backend a sandbox runs on (its state.json "runtime"; empty: native,
/// as sandboxes of older versions). Throws as validate_backend_name.
std::unique_ptr<Backend> backend_for(const SandboxState& st, const BackendOptions& opts = {});

/// The sandbox `id` under opts.run_root: its state dir and state.json.
/// Throws sbx::Error when it has no state.json.
SandboxRef open_sandbox(const std::string& run_root, const std::string& id);

}  // namespace sbx::runtime
