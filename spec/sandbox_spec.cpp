#include "spec/sandbox_spec.h"

namespace sbx::spec {

const std::vector<std::string>& default_capabilities() {
  // The default set of podman (containers.conf) and docker/moby.
  static const std::vector<std::string> caps = {
      "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FOWNER",           "CAP_FSETID",
      "CAP_KILL",   "CAP_NET_BIND_SERVICE", "CAP_SETFCAP",      "CAP_SETGID",
      "CAP_SETPCAP", "CAP_SETUID",      "CAP_SYS_CHROOT",       "CAP_MKNOD",
      "CAP_AUDIT_WRITE", "CAP_NET_RAW"};
  return caps;
}

}  // namespace sbx::spec
