// Removing directory trees without following symlinks (image store internals).
#pragma once
#include <string>

namespace sbx::oci {

/// Removes `name` under the directory fd `dirfd` (a file, symlink or a whole
/// directory tree), never following symlinks. ENOENT is not an error. Throws
/// sbx::Error naming `what` (a path for messages) on failure.
void remove_tree_at(int dirfd, const std::string& name, const std::string& what);

/// Same for an absolute or cwd-relative path.
void remove_tree(const std::string& path);

}  // namespace sbx::oci
