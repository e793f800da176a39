// `sbx push`: an image of the store (imported, pulled or a snapshot) to a
// registry (OCI distribution-spec "push": blobs first, each skipped when the
// registry has it (HEAD), else mounted from another repository of the same
// registry the image was pulled from (POST ?mount=&from=), else a monolithic
// POST + PUT ?digest= upload; then the manifest, as stored, under the tag).
#pragma once
#include <functional>
#include <string>

#include "oci/pull.h"
#include "oci/store.h"

namespace sbx::oci {

struct PushOptions {
  RegistryOptions registry;
  std::function<void(const PullEvent&)> progress;  ///< blob-exists, blob-start, blob-mounted, blob-done, done
};

/// Pushes the image `image` (any reference Store::resolve takes) to `dest`
/// (a registry reference; empty: `image` itself, which must then name a
/// registry). Returns the manifest digest pushed ("sha256:…"), the same the
/// store holds. Throws sbx::Error for unknown images, unreachable registries,
/// auth failures and refused uploads.
std::string push_image(Store& store, const std::string& image, const std::string& dest, const PushOptions& opts = {});

}  // namespace sbx::oci
