// `sbx pull`: an image from a registry into the store, and the
// resolve-or-pull step of `sbx run`/`create` (--pull missing|always|never|newer).
//
// Flow (OCI distribution-spec "pull"): ping /v2/, authenticate, fetch the
// manifest (an index or manifest list: the entry for the wanted platform,
// default the host's linux/amd64), then the config and layer blobs several at
// a time. Each blob streams into ROOT/tmp/blob-HEX.partial while it is hashed;
// it gets its place in ROOT/blobs/ only once its sha256 and size match the
// manifest. A broken transfer is retried with Range from where it stopped, and
// a partial file left by an interrupted pull is resumed by the next one. A
// per-blob lock makes two concurrent pulls fetch each blob once. The layers
// are then unpacked and the image indexed by Store::import (oci/import.cpp),
// so pulled images go through the same safe unpack and checks as imported ones.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "oci/image.h"
#include "oci/registry_client.h"
#include "oci/store.h"

namespace sbx::oci {

/// One progress event, for a display (the CLI draws it) or --json.
struct PullEvent {
  std::string kind;    ///< "resolved", "blob-start", "blob-progress", "blob-exists", "blob-done", "unpacking", "done"
  std::string digest;  ///< the blob (blob-*), the manifest (resolved)
  uint64_t bytes = 0;  ///< bytes so far (blob-progress/done; unpacking: compressed bytes read)
  uint64_t total = 0;  ///< the blob's size
  int layer = 0, layers = 0;  ///< unpacking: 1-based layer and count
};

/// $CONTAINERS_REGISTRIES_CONF when set (podman's variable), else
/// /etc/containers/registries.conf (containers-registries.conf(5)).
std::string default_registries_conf();

struct PullOptions {
  RegistryOptions registry;
  std::string platform;  ///< "os/arch[/variant]"; empty: linux/amd64 (the host)
  int jobs = 3;          ///< blobs downloaded at once
  /// registries.conf (oci/registries_conf.h): search list for short names,
  /// insecure/blocked registries, mirrors. Empty or absent file: none.
  /// Default: $CONTAINERS_REGISTRIES_CONF (as podman), else the system file.
  std::string registries_conf = default_registries_conf();
  /// Called with events, from one thread at a time.
  std::function<void(const PullEvent&)> progress;
};

/// Pulls `ref` (e.g. "127.0.0.1:5000/busybox:latest", "python:3.12") into
/// `store` and names it ref's local name. A short name is looked up in the
/// unqualified-search-registries of opts.registries_conf in order (default
/// docker.io); mirrors are tried before their registry; a blocked registry is
/// refused. Returns the stored image. Throws
/// sbx::Error (exit code 125) for unreachable registries, auth failures,
/// unknown images or platforms, schema 1 manifests, digest or size
/// mismatches, oversize manifests; nothing unverified becomes visible.
ImageRecord pull_image(Store& store, const std::string& ref, const PullOptions& opts = {});

enum class PullPolicy { Missing, Always, Never, Newer };

/// Parses "missing", "always", "never", "newer"; throws sbx::Error otherwise.
PullPolicy parse_pull_policy(const std::string& s);

/// What `sbx run IMAGE` / `sbx create IMAGE` do to find IMAGE: the local
/// image, pulling it first as `policy` says (Missing: only when absent;
/// Always: pull; Newer: pull, and fall back to the local image when the
/// registry cannot be reached; Never: local only). A short name ("python:3.12")
/// that is not in the store is looked up as docker and podman do: in the
/// unqualified-search-registries of the registries.conf, else docker.io.
/// `policy_explicit` (the user named --pull) is kept for the message only.
/// Throws the store's "not found" error or the pull's error.
ImageRecord resolve_or_pull(Store& store, const std::string& ref, PullPolicy policy, bool policy_explicit,
                            const PullOptions& opts = {});

}  // namespace sbx::oci
