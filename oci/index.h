// The store's index of images (ROOT/images.json): read and written whole,
// atomically (temp file + rename). Internal to oci/; callers hold store.lock.
#pragma once
#include <string>
#include <vector>

#include "oci/image.h"

namespace sbx::oci {

/// Reads ROOT/images.json; an absent file is an empty index. Throws
/// sbx::Error when the file is not a valid index (with the path and the fix).
std::vector<ImageRecord> read_index(const std::string& root);

/// Writes ROOT/images.json atomically.
void write_index(const std::string& root, const std::vector<ImageRecord>& images);

}  // namespace sbx::oci
