// Registering a new image made of an existing image's layers plus one new
// layer (what `sbx snapshot` and podman/docker commit produce). The new image
// shares every lower layer with its parent: only the new layer is stored.
// Spec: OCI image-spec manifest.md, config.md (rootfs.diff_ids, history).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "oci/image.h"
#include "oci/store.h"

namespace sbx::oci {

struct CommitOptions {
  std::string name;        ///< "repository[:tag]" for the new image; empty: untagged
  std::string created_by;  ///< history "created_by" (e.g. "sbx snapshot 3f2a…")
  std::string comment;     ///< history "comment"
  std::map<std::string, std::string> labels;  ///< added to the config's Labels
};

/// Adds an image to `store`: the parent image `parent_ref`'s layers, then the
/// uncompressed layer tar at `layer_tar` (sha256 `layer_hex`, which is also
/// its diff id). The tar file must be on the store's file system (e.g. under
/// ROOT/tmp): it is moved into ROOT/blobs, not copied. The config is the
/// parent's with the diff id and a history entry appended and "created" set to
/// now; the manifest lists the parent's layer blobs and the new one. The new
/// layer is unpacked by the store's import, so the result is an ordinary image
/// (run, inspect, rmi, export work on it). Returns its record.
/// Throws sbx::Error when the parent is unknown, its manifest or config blob is
/// missing or corrupt, or the store cannot be written; nothing half-made is
/// left in the index (an unreferenced blob is removed by `sbx gc`).
ImageRecord commit_layer(Store& store, const std::string& parent_ref, const std::string& layer_tar,
                         const std::string& layer_hex, const CommitOptions& opts);

/// What commit_image adds: an image made of a parent's layers (or none), at
/// most one new layer, and a config the caller wrote (what `sbx build`
/// produces for each step).
struct ImageCommit {
  std::string parent;       ///< ref or id whose layers come first; empty: no layers (FROM scratch)
  std::string layer_tar;    ///< a new top layer: an uncompressed tar on the store's file system; empty: none
  std::string layer_hex;    ///< its sha256 (which is also its diff id)
  std::string config_json;  ///< the whole image config: rootfs.diff_ids must list every layer
  std::string name;         ///< "repository[:tag]"; empty: untagged
  bool build_cache = false; ///< ImageRecord::build_cache (hidden from listings until tagged)
};

/// Adds the image `c` describes to `store`: the new layer tar is moved into
/// the blobs (not copied), a manifest lists the parent's layer blobs and the
/// new one, and the store's import indexes it (unpacking the new layer), so
/// it is an ordinary image. Returns its record. Throws sbx::Error as
/// commit_layer, and when the config's diff ids do not match the layers;
/// nothing half-made is left in the index.
ImageRecord commit_image(Store& store, const ImageCommit& c);

/// The config blob of a stored image as JSON text (verified against its id).
/// Throws sbx::Error when it is missing or corrupt.
std::string image_config_json(const Store& store, const ImageRecord& image);

}  // namespace sbx::oci
