// Image commands shared with other CLI files.
#pragma once
#include <string>

#include "cli/commands.h"

namespace sbx::cli {

/// Prints `sbx inspect IMAGE` (pretty JSON: Id, RepoTags, Config{Env, Cmd,
/// Entrypoint, WorkingDir, User, ...}, RootFS, Layers, LayerDirs) to stdout
/// and returns 0. Throws sbx::Error when `ref` names no image in g.root.
int inspect_image(const Globals& g, const std::string& ref);

}  // namespace sbx::cli
