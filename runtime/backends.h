// The backend registry: the one place that maps the names users type
// (--runtime NAME, state.json "runtime") to runtime/backend.h implementations,
// and the flows that meet sandboxes of every backend (gc, sbx info).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/host_support.h"

namespace sbx::runtime {

/// The names of every backend ("native" first: the default).
const std::vector<std::string>& backend_names();

/// The backend of sandboxes whose spec or state names none.
const std::string& default_backend_name();

/// Throws sbx::Error "invalid --runtime 'NAME': use native or gvisor" unless
/// `name` is a backend's name.
void validate_backend_name(const std::string& name);

/// The backend name for an OCI runtime's name as Docker clients give it
/// ("runc": native, "runsc": gvisor); any other name as it is.
std::string backend_name_for_runtime(const std::string& name);

/// The backend called `name`. Throws as validate_backend_name.
std::unique_ptr<Backend> backend_for(const std::string& name, const BackendOptions& opts = {});

/// The backend a sandbox runs on (its state.json "runtime"; empty: native,
/// as sandboxes of older versions). Throws as validate_backend_name.
std::unique_ptr<Backend> backend_for(const SandboxState& st, const BackendOptions& opts = {});

/// As backend_for(st, opts), but nullptr for a name no backend has (a
/// sandbox of another sbx version): runtime::BackendOf, for gc.
std::unique_ptr<Backend> backend_of(const SandboxState& st, const BackendOptions& opts);

/// The sandbox `id` under opts.run_root: its state dir and state.json.
/// Throws sbx::Error when it has no state.json.
SandboxRef open_sandbox(const std::string& run_root, const std::string& id);

/// Removes what dead sandboxes of every backend left in `run_root`
/// (runtime/lifecycle.h gc with backend_of); returns what it removed.
std::vector<std::string> gc_sandboxes(const std::string& run_root);

/// Probes each backend on this host (Backend::probe; gVisor: runsc at
/// `runsc`, or on $PATH), for `sbx info`. Never throws.
std::vector<RuntimeSupport> probe_runtimes(const std::string& runsc = "");

/// Whether argv asks for one of sbx's fresh helpers (runtime/linux/self_exec.h:
/// a process with secrets, `sbx serve`, execs one to join or start a sandbox).
/// The command line's main() asks first thing. No throw.
bool is_internal_helper(int argc, char** argv) noexcept;

/// Runs the helper argv asks for (the native backend's, runtime/native/
/// fresh_helper.h); returns its exit status (125 with a message on stderr
/// for a command line no sbx made). No throw.
int run_internal_helper(int argc, char** argv) noexcept;

}  // namespace sbx::runtime
