#include "runtime/gvisor/nvproxy.h"

#include <cctype>

#include "common/error.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/runsc_features.h"

namespace sbx::runtime {

bool runsc_output_has_nvproxy(std::string_view out) {
  for (size_t pos = out.find("nvproxy"); pos != std::string_view::npos; pos = out.find("nvproxy", pos + 1)) {
    if (pos == 0 || out[pos - 1] != '-') continue;  // must be the flag itself: -nvproxy / --nvproxy
    size_t end = pos + 7;
    if (end < out.size() && (std::isalnum(static_cast<unsigned char>(out[end])) || out[end] == '-' || out[end] == '_'))
      continue;  // -nvproxy-docker etc. alone do not prove --nvproxy exists
    return true;
  }
  return false;
}

bool runsc_supports_nvproxy(const std::string& runsc) {
  return runsc_features(find_runsc(runsc)).nvproxy;
}

void require_nvproxy(const std::string& runsc, const std::string& host_driver_version) {
  const std::string path = find_runsc(runsc);
  auto f = runsc_features(path);
  if (f.nvproxy && !nvproxy_supports_driver(f, host_driver_version))
    throw Error("--gpus with --runtime gvisor: the nvproxy of " + path + " (" + f.version +
                ") does not support this host's NVIDIA driver " + host_driver_version + " (it knows " +
                std::to_string(f.nvproxy_drivers.size()) + " driver versions, the newest " + f.nvproxy_drivers.back() +
                "; see 'runsc nvproxy list-supported-drivers'); install a gVisor release that lists " +
                host_driver_version + " and pass it with --runsc PATH, or use --runtime native");
  if (f.nvproxy) return;
  throw Error("--gpus with --runtime gvisor needs runsc with nvproxy support, but " + path + " (" + f.version +
              ") has no --nvproxy flag; install runsc from Debian's bookworm-backports (0.0~20240729, see "
              ".ci/runsc-backports.sh) or another gVisor release from 2023 or later, pass it with --runsc PATH, "
              "or use --runtime native");
}

}  // namespace sbx::runtime
