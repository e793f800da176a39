// Image references as podman/docker users type them (distribution/reference
// grammar, simplified to what a local store needs):
//   busybox            == busybox:latest == localhost/busybox:latest
//   docker.io/library/busybox:1.36 == busybox:1.36
//   quay.io/org/app@sha256:<64 hex>
//   sha256:<64 hex>, <64 hex>, or a unique prefix of an image id
#pragma once
#include <string>
#include <string_view>

namespace sbx::oci {

struct Reference {
  enum class Kind {
    Name,        ///< repository[:tag]; `tag` is "latest" when none was given
    NameDigest,  ///< repository@sha256:... (a tag before '@' is ignored, as podman)
    Id,          ///< sha256:<id prefix> or a hex string; `id` holds the hex prefix
  };
  Kind kind = Kind::Name;
  std::string repository;  ///< normalised: no "localhost/" or "docker.io/library/"
  std::string tag;         ///< Name only
  std::string digest;      ///< NameDigest only: "sha256:<64 hex>"
  std::string id;          ///< Id only: 1..64 lower-case hex digits
  /// Kind::Name whose text is also valid hex (e.g. "cafe"): resolve tries the
  /// name first, then it as an id prefix, like podman.
  bool maybe_id = false;

  /// "repository:tag" for Name, "repository@digest" for NameDigest, the id otherwise.
  std::string str() const;
};

/// Parses a reference typed by a user. Throws sbx::Error with the reason
/// ("invalid image reference 'X': ...") for empty input, upper-case or otherwise
/// invalid repository names, bad tags or malformed digests.
Reference parse_reference(std::string_view text);

/// Parses a name to give an image (`sbx import PATH NAME`, `sbx tag`): must be
/// repository[:tag]; returns normalised "repository:tag". Throws sbx::Error for
/// digests, ids or invalid names.
std::string normalize_name(std::string_view text);

/// Strips the default registry prefixes ("localhost/", "docker.io/library/",
/// "index.docker.io/library/") from a repository name.
std::string normalize_repository(std::string_view repo);

}  // namespace sbx::oci
