// Linux capabilities of the sandboxed process (capabilities(7)), via libcap.
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// Parses "CAP_CHOWN" / "chown" / "ALL" names into capability numbers.
/// Throws sbx::Error on an unknown name.
std::vector<int> parse_capabilities(const std::vector<std::string>& names);

/// Step 1, while still uid 0: drops every capability not in `keep` from the
/// bounding set and clears the ambient set, and asks the kernel to keep the
/// permitted set across the coming setuid (PR_SET_KEEPCAPS). Throws sbx::Error.
void drop_bounding(const std::vector<int>& keep);

/// Step 2, after setuid/setgid: sets effective = permitted = inheritable =
/// `keep` when the process is uid 0, and empty sets otherwise (as docker does
/// for a non-root user). Throws sbx::Error.
void apply_capabilities(const std::vector<int>& keep, bool root);

}  // namespace sbx::runtime
