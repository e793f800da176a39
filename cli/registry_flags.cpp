// The registry commands' shared flags (cli/registry_flags.h).
#include "cli/registry_flags.h"

namespace sbx::cli {

void add_registry_flags(CLI::App* cmd, RegistryFlags& f) {
  cmd->add_option("--tls-verify", f.tls_verify,
                  "Verify TLS certificates (false: also allows plain HTTP; plain HTTP is always allowed for localhost/127.0.0.1)")
      ->check(CLI::IsMember({"true", "false"}))
      ->capture_default_str();
  cmd->add_option("--authfile", f.authfile, "Credentials file (default: $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json)");
  cmd->add_option("--cert-dir", f.cert_dir, "Directory of HOST/ca.crt CA files")->capture_default_str();
}

oci::RegistryOptions registry_options(const RegistryFlags& f) {
  oci::RegistryOptions o;
  o.tls_verify = f.tls_verify != "false";
  o.authfile = f.authfile;
  o.cert_dir = f.cert_dir;
  return o;
}

}  // namespace sbx::cli
