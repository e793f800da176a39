// `sbx export IMAGE -o FILE`: writes an image from the store as an
// oci-archive (a tar of an OCI image layout, image-spec image-layout.md) or a
// docker-archive (`docker save` format: manifest.json, config, layer files),
// which podman, skopeo and docker load. Blobs are written as stored, so the
// image id and manifest digest survive the round trip.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "oci/store.h"

namespace sbx::oci {

enum class ArchiveFormat { OciArchive, DockerArchive };

/// Parses "oci-archive" / "docker-archive" (also "oci", "docker"). Throws
/// sbx::Error listing the accepted values.
ArchiveFormat parse_archive_format(const std::string& s);

struct ExportResult {
  std::string image_id;         ///< hex config digest
  std::string manifest_digest;  ///< "sha256:…"
  std::string name;             ///< "name:tag" recorded in the archive ("" when untagged)
  uint64_t bytes = 0;           ///< size of the archive
};

/// Writes image `ref` to `out_path` (atomically: a temp file beside it, then
/// rename). The archive names the image `name` when given, else the ref when
/// it is a name the image has, else its first name. Each blob is re-hashed
/// while copied; a blob that no longer matches its digest aborts the export
/// (sbx::Error naming it). Throws sbx::Error on an unknown image or I/O errors.
ExportResult export_image(const Store& store, const std::string& ref, const std::string& out_path,
                          ArchiveFormat format, const std::string& name = "");

/// `docker save A B`: one docker-archive at `out_path` holding several
/// images, `images` as (ref, name recorded in the archive; "" as
/// export_image picks it). Blobs the images share are written once. Atomic
/// as export_image. Returns the archive's size (bytes). Throws sbx::Error:
/// no image, an unknown one, I/O errors.
uint64_t export_docker_archive(const Store& store, const std::vector<std::pair<std::string, std::string>>& images,
                               const std::string& out_path);

}  // namespace sbx::oci
