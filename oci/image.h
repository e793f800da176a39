// What the rest of sbx needs to know about an image in the store: its id, its
// names, the runtime-relevant parts of its config, and its unpacked layers.
// Spec: OCI image-spec config.md (https://github.com/opencontainers/image-spec).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sbx::oci {

/// The "config" object of an OCI image config (the parts a runtime uses).
struct ImageConfig {
  std::vector<std::string> env;         ///< "KEY=VALUE"
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::string user;
  std::string stop_signal;
  std::map<std::string, std::string> labels;
};

/// One image in the store.
struct ImageRecord {
  std::string id;               ///< sha256 hex of the config blob (podman's image id)
  std::string manifest_digest;  ///< "sha256:..."
  std::vector<std::string> names;  ///< "name:tag", as imported/tagged
  std::vector<std::string> diff_ids;  ///< "sha256:..." bottom first
  std::vector<std::string> chain_ids; ///< "sha256:..." bottom first; keys of unpacked layers
  ImageConfig config;
  std::string created;          ///< RFC 3339 from the config, may be empty
  std::string architecture;
  std::string os;
  uint64_t size = 0;            ///< bytes of the compressed blobs
  // Added by the store (oci/):
  std::vector<std::string> layer_digests;  ///< "sha256:..." layer blobs as stored, bottom first
  uint64_t unpacked_size = 0;   ///< bytes of the unpacked layers (files' apparent sizes)
  std::vector<uint64_t> layer_unpacked_sizes;  ///< per layer, bottom first
  std::string imported;         ///< RFC 3339 UTC time of the import
  /// Removed with `rmi --force` while a sandbox still used it: hidden from
  /// resolve/list, its layers kept until `sbx gc` finds no sandbox using it.
  bool removed = false;
  /// An intermediate step of `sbx build`, kept as build cache: hidden from
  /// list() while it has no name, removed by `sbx image prune`.
  bool build_cache = false;
};

/// The record as pretty JSON (what `sbx inspect IMAGE` prints): Id, Names,
/// Digest, Created, Architecture, Os, Size, UnpackedSize, Config{Env, Cmd,
/// Entrypoint, WorkingDir, User, StopSignal, Labels}, RootFS{DiffIDs},
/// Layers (blob digests), ChainIDs. `layer_dirs` are added as LayerDirs.
std::string image_inspect_json(const ImageRecord& image, const std::vector<std::string>& layer_dirs = {});

}  // namespace sbx::oci
