// The image store under --root (default /var/lib/sbx): content-addressed blobs,
// unpacked layers shared read-only by every sandbox, and an index of images.
//
// Layout (see DESIGN.md):
//   ROOT/blobs/sha256/<hex>         verified blobs (manifests, configs, layers)
//   ROOT/layers/<chain-id hex>/     one unpacked layer, usable as an overlay lower dir
//   ROOT/images.json                index of images (written atomically)
//   ROOT/store.lock                 flock: shared for readers, exclusive for writers
#pragma once
#include <string>
#include <vector>

#include "oci/image.h"

namespace sbx::oci {

class Store {
 public:
  /// Opens (creating if needed) the store at `root`. Throws sbx::Error when the
  /// directory cannot be created or read.
  explicit Store(std::string root);

  const std::string& root() const { return root_; }

  /// Finds an image by "name[:tag]" (tag defaults to "latest"), "name@sha256:…",
  /// "sha256:<id>", a full id or a unique id prefix, as podman does. Throws
  /// sbx::Error ("image 'x' not found; see 'sbx images' or import it with
  /// 'sbx import'") when none matches, or when a prefix is ambiguous.
  /// Fast: it reads one small index file (it is on the sandbox start path).
  ImageRecord resolve(const std::string& ref) const;

  /// Absolute paths of the image's unpacked layer directories, bottom first,
  /// ready to be overlay lower dirs (top layer must come first in lowerdir=).
  std::vector<std::string> layer_dirs(const ImageRecord& image) const;

  /// All images, newest first.
  std::vector<ImageRecord> list() const;

 private:
  std::string root_;
};

}  // namespace sbx::oci
