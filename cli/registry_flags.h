// The flags every registry command (pull, push, login) shares, with podman's
// names, and the registry options they give (oci/pull.h RegistryOptions).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "oci/pull.h"

namespace sbx::cli {

/// --tls-verify, --authfile, --cert-dir as typed.
struct RegistryFlags {
  std::string tls_verify = "true", authfile, cert_dir = "/etc/containers/certs.d";
};

/// Adds the shared flags to `cmd`, stored in `f` (which must outlive it).
void add_registry_flags(CLI::App* cmd, RegistryFlags& f);

/// The registry options of the flags: TLS verification off only for
/// --tls-verify=false.
oci::RegistryOptions registry_options(const RegistryFlags& f);

}  // namespace sbx::cli
