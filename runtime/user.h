// -u / image User: "name", "uid", "name:group", "uid:gid" resolved against the
// sandbox's own /etc/passwd and /etc/group (as docker/runc: the image's files,
// not the host's).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sbx::runtime {

struct ResolvedUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  ///< supplementary groups from /etc/group
  std::string home = "/";        ///< from /etc/passwd ("/" when unknown)
};

/// Parses a numeric user or group id. Refuses what is not a decimal number
/// and ids >= 4294967295: (uid_t)-1 means "unchanged" to setresuid(2), so
/// -u 4294967295 would keep the init's identity (root). The one parser for
/// run, exec and gVisor (resolve_user). Throws sbx::Error (exit 125) naming
/// `what` ("user id", "group id", ...).
uint32_t parse_id(const std::string& text, const std::string& what);

/// Resolves `user` using ROOT/etc/passwd and ROOT/etc/group. An empty text is
/// root. A numeric uid not in passwd gets gid 0 (as docker). Throws
/// sbx::Error ("unable to find user bob: no matching entries in passwd file").
ResolvedUser resolve_user(const std::string& user, const std::string& root = "/");

/// The gid of group `name` in ROOT/etc/group, or nullopt when the file or
/// the group is not there. Reads the file itself, as dockerd does for its
/// socket's group: not through NSS, which a static sbx cannot load safely
/// (glibc's static getgrnam dlopens the host's NSS modules). Throws
/// sbx::Error for a malformed gid.
std::optional<uint32_t> group_id(const std::string& name, const std::string& root = "/");

}  // namespace sbx::runtime
