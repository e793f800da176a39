#include "runtime/backends.h"

#include "common/error.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/native/native.h"

namespace sbx::runtime {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {NativeBackend::kName, GvisorBackend::kName};
  return names;
}

void validate_backend_name(const std::string& name) {
  for (const auto& n : backend_names())
    if (n == name) return;
  std::string list;
  for (size_t i = 0; i < backend_names().size(); ++i)
    list += (i == 0 ? "" : i + 1 == backend_names().size() ? " or " : ", ") + backend_names()[i];
  throw Error("invalid --runtime '" + name + "': use " + list);
}

std::unique_ptr<Backend> backend_for(const std::string& name, const BackendOptions& opts) {
  if (name == NativeBackend::kName) return std::make_unique<NativeBackend>(opts);
  if (name == GvisorBackend::kName) return std::make_unique<GvisorBackend>(opts);
  validate_backend_name(name);
  throw Error("backend '" + name + "' is registered but not constructible");  // unreachable
}

std::unique_ptr<Backend> backend_for(const SandboxState& st, const BackendOptions& opts) {
  return backend_for(st.runtime.empty() ? std::string(NativeBackend::kName) : st.runtime, opts);
}

SandboxRef open_sandbox(const std::string& run_root, const std::string& id) {
  SandboxRef r;
  r.dir = sandbox_dir(run_root, id);
  r.state = read_state(r.dir);
  return r;
}

}  // namespace sbx::runtime
