// registries.conf: the subset of the containers-registries.conf(5) v2 TOML
// format that users have:
//   unqualified-search-registries = ["docker.io", "quay.io"]
//   [[registry]]
//   location = "localhost:5000"   (also prefix = …, treated as location)
//   insecure = true               (no TLS verification, plain HTTP allowed)
//   blocked = true                (never pulled from)
//   [[registry.mirror]]
//   location = "mirror.internal:5000"
//   insecure = true
// Read from /etc/containers/registries.conf or --registries-conf.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace sbx::oci {

struct RegistryEndpoint {
  std::string location;  ///< host[:port][/namespace]
  bool insecure = false;
};

struct RegistryEntry {
  std::string location;
  bool insecure = false, blocked = false;
  std::vector<RegistryEndpoint> mirrors;  ///< tried in order before location
};

struct RegistriesConf {
  std::vector<std::string> search;  ///< unqualified-search-registries (empty: docker.io, as docker)
  std::vector<RegistryEntry> registries;
  /// The entry whose location is `registry` or a prefix of "registry/repository"
  /// (longest wins); nullptr when none.
  const RegistryEntry* find(const std::string& registry, const std::string& repository) const;
};

/// Parses `path`; an absent file gives an empty config. Throws sbx::Error
/// naming the file and line for syntax this subset does not understand.
RegistriesConf load_registries_conf(const std::string& path);

/// Parses registries.conf text (`what` names it in errors).
RegistriesConf parse_registries_conf(const std::string& text, const std::string& what);

}  // namespace sbx::oci
