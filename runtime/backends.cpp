#include "runtime/backends.h"

#include "common/error.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/lifecycle.h"
#include "runtime/native/fresh_helper.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/native.h"

namespace sbx::runtime {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {NativeBackend::kName, GvisorBackend::kName};
  return names;
}

const std::string& default_backend_name() { return backend_names().front(); }

void validate_backend_name(const std::string& name) {
  for (const auto& n : backend_names())
    if (n == name) return;
  std::string list;
  for (size_t i = 0; i < backend_names().size(); ++i)
    list += (i == 0 ? "" : i + 1 == backend_names().size() ? " or " : ", ") + backend_names()[i];
  throw Error(ErrorKind::InvalidArgument, "invalid --runtime '" + name + "': use " + list);
}

std::string backend_name_for_runtime(const std::string& name) {
  if (name == "runc") return NativeBackend::kName;
  if (name == "runsc") return GvisorBackend::kName;
  return name;
}

std::unique_ptr<Backend> backend_for(const std::string& name, const BackendOptions& opts) {
  BackendOptions o = opts;
  if (!o.backend_of) o.backend_of = &backend_of;
  if (name == NativeBackend::kName) return std::make_unique<NativeBackend>(std::move(o));
  if (name == GvisorBackend::kName) return std::make_unique<GvisorBackend>(std::move(o));
  validate_backend_name(name);
  throw Error("backend '" + name + "' is registered but not constructible");  // unreachable
}

std::unique_ptr<Backend> backend_for(const SandboxState& st, const BackendOptions& opts) {
  return backend_for(st.runtime.empty() ? default_backend_name() : st.runtime, opts);
}

std::unique_ptr<Backend> backend_of(const SandboxState& st, const BackendOptions& opts) {
  try {
    return backend_for(st, opts);
  } catch (const Error&) {
    return nullptr;  // a backend this sbx does not have
  }
}

SandboxRef open_sandbox(const std::string& run_root, const std::string& id) {
  SandboxRef r;
  r.dir = sandbox_dir(run_root, id);
  r.state = read_state(r.dir);
  return r;
}

std::vector<std::string> gc_sandboxes(const std::string& run_root) {
  std::vector<std::string> out = gc(run_root, &backend_of);
  // Holder programs other sbx builds wrote that no holder executes any more.
  for (auto& p : gc_init_binaries(run_root)) out.push_back(std::move(p));
  return out;
}

std::vector<RuntimeSupport> probe_runtimes(const std::string& runsc) {
  BackendOptions o;
  o.runsc = runsc;
  std::vector<RuntimeSupport> out;
  for (const auto& n : backend_names()) out.push_back(backend_for(n, o)->probe());
  return out;
}

bool is_internal_helper(int argc, char** argv) noexcept { return is_fresh_helper(argc, argv); }

int run_internal_helper(int argc, char** argv) noexcept { return run_fresh_helper(argc, argv); }

}  // namespace sbx::runtime
