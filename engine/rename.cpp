#include "engine/rename.h"

#include "common/error.h"
#include "common/fs.h"
#include "engine/engine.h"
#include "runtime/state.h"

namespace sbx::engine {

std::string rename_sandbox(Engine& engine, const std::string& ref, const std::string& name) {
  const std::string& run_root = engine.config().run_root;
  std::string id = engine.resolve(ref);
  runtime::validate_name(name);
  std::string dir = runtime::sandbox_dir(run_root, id);
  std::string old = runtime::read_state(dir).name;
  if (old == name)
    throw Error(ErrorKind::InvalidArgument, "sandbox " + id.substr(0, 12) + " is named '" + name + "' already");
  runtime::claim_name(run_root, name, id);  // Conflict when another sandbox has it
  try {
    // The lock the sandbox's own state updates take: no update is lost.
    fs::FileLock lock(dir + "/lock");
    runtime::SandboxState st = runtime::read_state(dir);
    if (st.status == "creating")
      throw Error(ErrorKind::Conflict, "sandbox " + id.substr(0, 12) + " is still being created; rename it once it runs");
    old = st.name;
    st.name = name;
    runtime::write_state(dir, st);
  } catch (...) {
    runtime::release_name(run_root, name, id);
    throw;
  }
  runtime::release_name(run_root, old, id);
  return id;
}

}  // namespace sbx::engine
