// The build cache. A step's key is a sha256 chained from its parent's key
// (which starts from the base image's id), the instruction as it will run
// (variables substituted, flags included), the build arguments a RUN sees
// and, for COPY/ADD, a digest of the sources' content and metadata
// (engine/build/context.h SourceTree::digest). Equal keys mean the same
// result, so the step is not run again.
//
// The entries are the images themselves: each step's result is an image in
// the store (ImageRecord::build_cache while no name points at it) and the
// cache index only maps a key to that image's id, one small file per key
// under ROOT/build-cache/ (written atomically; two builds writing one key
// both write a valid answer). An entry whose image is gone (`sbx image
// prune`, `sbx rmi`) is a miss and is removed.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "oci/image.h"
#include "oci/store.h"

namespace sbx::build {

/// Builds one key: feed the parts, then hex().
class CacheKey {
 public:
  /// The first key of a stage: on `base` (an image id, or "scratch").
  static CacheKey from(const std::string& base);
  /// The key of the step after the one whose key is `parent`.
  static CacheKey after(const std::string& parent);
  /// Adds one named part (separated so that "a"+"bc" != "ab"+"c").
  CacheKey& add(std::string_view name, std::string_view value);
  /// The key, 64 hex characters.
  std::string hex() const;

 private:
  std::string text_;
};

/// The index ROOT/build-cache/.
class BuildCache {
 public:
  explicit BuildCache(oci::Store& store);
  /// The image stored for `key`, when there is one and it is still in the store.
  std::optional<oci::ImageRecord> lookup(const std::string& key) const;
  /// Records `image_id` as the result of `key`.
  void store(const std::string& key, const std::string& image_id);
  /// Removes every entry whose image is gone; returns how many.
  size_t prune();

 private:
  oci::Store& store_;
  std::string dir_;
};

}  // namespace sbx::build
