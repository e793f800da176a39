// sbx gc's part for named volumes (engine/volumes.h).
#pragma once
#include <string>
#include <vector>

namespace sbx::engine {

/// Removes what a killed volume create or rm left in ROOT/volumes (.rm-*
/// always; .tmp-* and .copy-* scratch dirs older than an hour) and the
/// references of sandboxes that are gone. Returns the paths removed. No throw
/// for what it cannot remove (it stays for the next gc).
std::vector<std::string> gc_volumes(const std::string& root);

}  // namespace sbx::engine
