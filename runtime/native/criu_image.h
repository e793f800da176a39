// CRIU's image files (https://criu.org/Images), the one part sbx edits: a
// user namespace's id maps (userns-<id>.img, CRIU's images/userns.proto).
//
// CRIU restores a user namespace with the id maps it dumped, so every copy
// restored from one checkpoint would share the checkpointed sandbox's host
// ids. sbx gives each copy a host id range of its own by rewriting these
// maps in the copy's image directory before `criu restore` (and shifting the
// ownership of the copy's writable layer the same way).
//
// File layout (criu/include/magic.h, criu/protobuf.c): two 32-bit magics
// (IMG_COMMON_MAGIC, USERNS_MAGIC), then for each entry a 32-bit
// little-endian size and that many bytes of protobuf (proto2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sbx::runtime {

/// One line of a uid_map/gid_map: ids [first, first+count) inside map to
/// [lower_first, lower_first+count) in the parent namespace.
struct CriuIdExtent {
  uint32_t first = 0;
  uint32_t lower_first = 0;
  uint32_t count = 0;
};

/// The maps of one user namespace (userns_entry).
struct CriuUsernsMaps {
  std::vector<CriuIdExtent> uid, gid;
};

/// Parses the bytes of a userns-<id>.img. Throws sbx::Error when they are not
/// one (wrong magic, truncated, a malformed protobuf).
CriuUsernsMaps parse_criu_userns_image(const std::string& bytes);

/// The bytes of a userns-<id>.img holding `maps` (parse_criu_userns_image's inverse).
std::string encode_criu_userns_image(const CriuUsernsMaps& maps);

/// Rewrites every userns-*.img in the image directory `dir`: extents whose
/// host ids lie in [from, from+count) move to the same place in [to,
/// to+count); others (nested namespaces: parent-relative ids) stay. Returns
/// how many extents moved. Throws sbx::Error (a file that cannot be read,
/// parsed or written; an extent that lies partly in the range).
int remap_criu_userns_images(const std::string& dir, uint32_t from, uint32_t to, uint32_t count);

}  // namespace sbx::runtime
