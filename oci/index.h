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

/// Writes ROOT/images.json atomically. The file is one JSON document with one
/// image record per line, so that read_index_matching can skip records.
void write_index(const std::string& root, const std::vector<ImageRecord>& images);

/// The sandbox start path: parses only the records whose line in images.json
/// contains one of `needles` (as serialised, e.g. "\"busybox:latest\"" or
/// "\"id\":\"ab12"), so the cost stays flat as the store grows. The caller
/// still matches exactly. Falls back to read_index for other layouts.
std::vector<ImageRecord> read_index_matching(const std::string& root, const std::vector<std::string>& needles);

}  // namespace sbx::oci
