// Registry credentials in the containers auth file, as podman and docker keep
// them (containers-auth.json(5)): {"auths": {"HOST": {"auth": base64("user:password")}}}.
// Read from, in order: --authfile / $REGISTRY_AUTH_FILE, else
// ${XDG_RUNTIME_DIR}/containers/auth.json (/run/containers/UID/auth.json when
// XDG_RUNTIME_DIR is unset, as podman), then ~/.config/containers/auth.json
// and ~/.docker/config.json. Written (login/logout) to the first one, mode 0600.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace sbx::oci {

struct Credentials {
  std::string username;
  std::string password;  ///< never printed or logged
};

/// The auth files to read, first = the one login writes. `authfile` (may be
/// empty) overrides the default first file.
std::vector<std::string> auth_files(const std::string& authfile = "");

/// Credentials for `registry` ("docker.io", "quay.io", "127.0.0.1:5000") from
/// the first auth file that has them; nullopt when none does. Throws
/// sbx::Error when a file exists but is not valid JSON (naming it).
std::optional<Credentials> find_credentials(const std::string& registry, const std::string& authfile = "");

/// Stores credentials for `registry` in the first auth file (created 0600,
/// written atomically). Returns the file's path.
std::string save_credentials(const std::string& registry, const Credentials& c, const std::string& authfile = "");

/// Removes `registry`'s entry from the first auth file (all entries when
/// `registry` is empty). Returns false when there was none.
bool remove_credentials(const std::string& registry, const std::string& authfile = "");

/// RFC 4648 base64 (with padding).
std::string base64_encode(const std::string& in);
/// Decodes base64; throws sbx::Error on invalid input.
std::string base64_decode(const std::string& in);

}  // namespace sbx::oci
