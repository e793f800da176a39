// A client for one repository on an OCI distribution-spec registry
// (https://github.com/opencontainers/distribution-spec/blob/main/spec.md; the
// Docker registry v2 API): /v2/ ping, token auth as in the Docker token spec
// (WWW-Authenticate: Bearer realm/service/scope, anonymous or with
// credentials, tokens reused until they expire) and Basic auth, manifests,
// blobs (streamed, with Range resume) and uploads.
//
// Plain HTTP is used only for loopback registries (localhost, 127.0.0.0/8,
// ::1) whose port does not speak TLS, or with tls_verify=false. CAs: the
// system's, or CERT_DIR/HOST/ca.crt when it exists (containers-certs.d(5)).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "oci/auth_config.h"
#include "oci/http.h"

namespace sbx::oci {

/// A reference to an image on a registry, as docker/podman resolve it:
/// "python" = docker.io/library/python:latest; "host:5000/r@sha256:…".
struct RemoteRef {
  std::string registry;    ///< "docker.io", "ghcr.io", "127.0.0.1:5000"
  std::string repository;  ///< "library/python", "o/r"
  std::string tag;         ///< "latest" when neither tag nor digest was given
  std::string digest;      ///< "sha256:…" or empty
  /// The host to talk to ("registry-1.docker.io" for docker.io).
  std::string api_host() const;
  /// "registry/repository:tag" or "…@digest" (full form, for messages).
  std::string str() const;
  /// The name the image gets in the local store ("python:3.12",
  /// "127.0.0.1:5000/busybox:latest"); empty for a digest-only reference.
  std::string local_name() const;
};

/// Parses a reference typed by a user. `qualified` (out, may be null) says
/// whether the text named its registry. Throws sbx::Error for invalid
/// references and image ids.
RemoteRef parse_remote_ref(std::string_view text, bool* qualified = nullptr);

/// True for localhost, 127.0.0.0/8 and [::1] (with or without a port).
bool is_loopback_registry(const std::string& registry);

/// The push chunk size in bytes: $SBX_PUSH_CHUNK_BYTES if it is a number
/// ≥ 1024, else 16 MiB.
uint64_t default_chunk_bytes();

struct RegistryOptions {
  bool tls_verify = true;                             ///< false: skip TLS verification, allow plain HTTP
  std::string cert_dir = "/etc/containers/certs.d";   ///< CERT_DIR/HOST/ca.crt
  std::string authfile;                               ///< overrides the default auth file
  std::optional<Credentials> credentials;             ///< else from the auth files
  /// Pushes: a blob larger than this goes up in chunks of this many bytes
  /// (PATCH with Content-Range; a cut connection costs one chunk), a smaller
  /// one in a single PUT. Default 16 MiB; $SBX_PUSH_CHUNK_BYTES overrides.
  uint64_t chunk_bytes = default_chunk_bytes();
};

/// A manifest (or index) as fetched: its bytes, media type and digest.
struct FetchedManifest {
  std::string body;
  std::string media_type;
  std::string digest;  ///< "sha256:" of body (verified against what was asked for)
};

class RegistryClient {
 public:
  /// `actions`: "pull" or "pull,push" (the token scope).
  RegistryClient(RemoteRef ref, std::string actions, RegistryOptions opts);

  /// GET /v2/: picks https or http and learns the auth challenge. Throws
  /// sbx::Error for an unknown host, a refused connection, TLS failures, or an
  /// answer that is not a registry's.
  void ping(http::Session& s);

  /// Checks the credentials (login): a 401 after authenticating throws
  /// sbx::Error "… wrong user name or password".
  void check_login(http::Session& s);

  /// GET a manifest by tag or digest with the full Accept list. Bodies over
  /// 4 MiB are refused; the digest is computed and checked against `ref` when
  /// it is a digest, and against Docker-Content-Digest. 404: "not found" error.
  FetchedManifest get_manifest(http::Session& s, const std::string& ref);

  /// GET a blob from byte `offset` on (Range), handing its bytes to `sink`;
  /// `on_status` gets 206 (resumed) or 200 (from byte 0) before the first
  /// byte. Returns false when the registry answered 416 (range not
  /// satisfiable: start again from 0). Throws http::TransportError for a cut
  /// transfer (the caller retries from where it stopped).
  bool get_blob(http::Session& s, const std::string& digest, uint64_t offset,
                const std::function<void(long)>& on_status, const std::function<void(std::string_view)>& sink);

  /// HEAD a blob: true when the registry has it.
  bool has_blob(http::Session& s, const std::string& digest);

  /// Uploads a blob from an open file: POST, then one PUT ?digest= (blobs up
  /// to opts.chunk_bytes), or PATCH chunks of opts.chunk_bytes with
  /// Content-Range, each retried after asking the registry how far it got
  /// (GET upload: Range), then PUT ?digest= (distribution-spec push, "chunked
  /// upload"). A registry that refuses PATCH (405/501) gets one PUT.
  /// With `from_repo` (a repository on the same registry that has the blob)
  /// it asks for a cross-repository mount first (POST ?mount=&from=); returns
  /// true when the registry mounted it (nothing was sent).
  bool upload_blob(http::Session& s, const std::string& digest, int fd, uint64_t size,
                   const std::string& from_repo = "");

  /// PUT a manifest under `tag_or_digest`.
  void put_manifest(http::Session& s, const std::string& tag_or_digest, const std::string& media_type,
                    const std::string& body);

  const RemoteRef& ref() const { return ref_; }

 private:
  http::Response send(http::Session& s, http::Request req, bool allow_auth_retry = true);
  // PATCHes [0, size) of fd to the upload at `loc` in opts_.chunk_bytes
  // pieces, updating `loc`; returns the bytes sent (0: the registry does not
  // take chunks).
  // An upload's Location header as an absolute URL; throws if it is none.
  std::string upload_url(std::string loc) const;
  uint64_t upload_chunks(http::Session& s, const std::string& digest, int fd, uint64_t size, std::string& loc);
  void authenticate(http::Session& s, const std::string& challenge);
  [[noreturn]] void fail(const std::string& what, const http::Response& r);
  http::Request base(const std::string& method, const std::string& path) const;

  RemoteRef ref_;
  std::string actions_;
  RegistryOptions opts_;
  std::string ca_file_;
  std::string base_url_;  ///< "https://host" once pinged
  std::mutex mu_;         ///< guards the auth state below (layers download in parallel)
  std::string auth_header_;
  int64_t token_expiry_ = 0;  ///< unix seconds; 0: none / Basic
  std::string challenge_;
};

}  // namespace sbx::oci
