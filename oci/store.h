// The image store under --root (default /var/lib/sbx): content-addressed blobs,
// unpacked layers shared read-only by every sandbox, and an index of images.
//
// Layout (see docs/design.md):
//   ROOT/blobs/sha256/<hex>         verified blobs (manifests, configs, layers)
//   ROOT/layers/<chain-id hex>/     one unpacked layer, usable as an overlay lower dir
//   ROOT/images.json                index of images (written atomically)
//   ROOT/store.lock                 flock: shared for readers, exclusive for writers
//   ROOT/gc.lock                    flock: shared by every import, exclusive by gc
//                                   (nothing is deleted while content is being added)
//   ROOT/tmp/                       per-import temp dirs; layers are unpacked here and
//                                   renamed into layers/ when complete
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "oci/image.h"

namespace sbx::oci {

/// Import progress, for a progress line on a terminal.
struct ImportProgress {
  std::string phase;       ///< "reading", "copying", "unpacking"
  int layer = 0;           ///< 1-based layer being unpacked (0 before)
  int layers = 0;          ///< layers in the image (0 while unknown)
  uint64_t bytes = 0;      ///< bytes done in this phase
  uint64_t total = 0;      ///< bytes in this phase (0 when unknown)
};

struct ImportOptions {
  /// "repository[:tag]" to give the image; empty: the name in the archive
  /// (docker-archive RepoTags, OCI ref.name annotation) or else one derived
  /// from the file name ("busybox.oci.tar" -> "busybox:latest").
  std::string name;
  std::function<void(const ImportProgress&)> progress;
  /// For a pull that is still downloading (oci/pull.cpp): called with a
  /// layer's blob digest just before that layer is unpacked; returns once
  /// the blob is in the store, verified, or throws why it never will be. Set,
  /// the layers are unpacked one by one as their blobs arrive, and import
  /// does not look for layer blobs in the source layout.
  std::function<void(const std::string& digest)> wait_for_blob;
  /// Record a new image as build cache (ImageRecord::build_cache); an image
  /// already in the index keeps its own state.
  bool build_cache = false;
};

struct RemoveResult {
  std::vector<std::string> untagged;  ///< "name:tag" removed
  std::string deleted;                ///< image id removed from the index, empty if only untagged
  bool content_kept = false;          ///< layers kept for live sandboxes (--force) or a running import
};

struct GcResult {
  uint64_t blobs = 0, layers = 0, temps = 0, images = 0;  ///< items removed
  uint64_t bytes = 0;                                       ///< bytes of blobs removed
};

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

  /// All images, newest first (build cache without a name left out unless
  /// `with_build_cache`).
  std::vector<ImageRecord> list(bool with_build_cache = false) const;

  /// Marks the image `id` (full id) as build cache or not (a finished
  /// `sbx build` result is not). Throws sbx::Error when it is unknown.
  void set_build_cache(const std::string& id, bool cache);

  /// Imports an OCI image layout directory, an oci-archive or a docker-archive
  /// (layers plain, gzip or zstd). Every blob's sha256 and size is verified, a
  /// blob already stored is not written again, each layer is unpacked once
  /// (keyed by chain id) into a temp dir and renamed into place. Returns the
  /// image (its id is the config digest, the same for all three formats).
  /// Throws sbx::Error on unreadable, corrupt or hostile input; nothing
  /// half-written stays visible (temp dirs are removed, or by `gc` after a crash).
  ImageRecord import(const std::string& path, const ImportOptions& opts = {});

  /// Adds the name "repository[:tag]" to the image `ref` (moving it from any
  /// other image, as podman tag does).
  void tag(const std::string& ref, const std::string& name);

  /// `sbx rmi`: a name with other names left only untags; otherwise removes the
  /// image from the index and deletes its blobs and layers that no other image
  /// uses. Refuses (sbx::Error, exit code 2 as podman) while a sandbox in
  /// `run_root` uses the image, unless `force`: then the record is hidden and
  /// its content kept until `gc` finds the sandbox gone. Unknown image: exit code 1.
  RemoveResult remove(const std::string& ref, const std::string& run_root, bool force);

  /// Removes blobs and layers no image references, records hidden by
  /// `rmi --force` whose sandboxes are gone, and temp dirs of crashed imports.
  /// Waits for running imports to finish.
  GcResult gc(const std::string& run_root);

  /// Ids of sandboxes in `run_root` whose RUN_ROOT/<id>/state.json has
  /// "image_id" equal to `image_id` (hex, with or without "sha256:").
  static std::vector<std::string> sandboxes_using(const std::string& run_root, const std::string& image_id);

  std::string blob_path(const std::string& digest) const;  ///< ROOT/blobs/sha256/<hex>

 private:
  GcResult sweep(const std::string& run_root);  // gc with gc.lock already held
  std::string root_;
};

}  // namespace sbx::oci
