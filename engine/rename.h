// Renaming a sandbox (`sbx rename`, Docker's POST /containers/{id}/rename):
// the new name is validated and claimed as `run --name` claims one
// (RUN_ROOT/.names, atomically), then recorded in the sandbox's state, then
// the old name is let go. A running sandbox keeps running.
#pragma once
#include <string>

namespace sbx::engine {

class Engine;

/// Renames sandbox `ref` (id, id prefix or name) to `name`. Returns its full
/// id. Throws sbx::Error: NotFound (no such sandbox), InvalidArgument (a bad
/// name, or the name it has), Conflict (the name is taken; the sandbox is
/// still being created). On error the sandbox keeps its old name and the new
/// one stays free.
std::string rename_sandbox(Engine& engine, const std::string& ref, const std::string& name);

}  // namespace sbx::engine
