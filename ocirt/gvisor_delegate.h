// Containers that ask for gVisor (annotation dev.sbx.runtime: gvisor) are
// handed to runsc, gVisor's OCI runtime, with the caller's own command line:
// sbx-runc records the choice at create (ROOT/.gvisor/<id>: the runsc flags
// to use, one per line) and passes every later command for that id to runsc
// with --root ROOT/.gvisor/runsc. So one runtime (one Kubernetes
// RuntimeClass handler, one podman --runtime) serves both isolation modes.
#pragma once
#include <string>
#include <vector>

#include "ocirt/config.h"

namespace sbx::ocirt {

/// Where runsc is: $SBX_RUNSC, else runsc on $PATH.
std::string runsc_binary();

/// Whether the bundle's config.json asks for gVisor (annotation
/// dev.sbx.runtime: gvisor). Throws sbx::Error when it cannot be read.
bool bundle_wants_gvisor(const std::string& bundle);

/// Whether `id` was created under gVisor (its marker exists).
bool is_gvisor_container(const std::string& root, const std::string& id) noexcept;

/// `create` of a gVisor container: records the marker (with runsc's flags:
/// --network=none when config.json asks for a new network namespace) and
/// runs `runsc create` with `args` (create's own arguments: --bundle …, ID).
/// Returns runsc's exit status; the marker is removed again when it fails.
/// Throws sbx::Error when runsc cannot be started or the id exists.
int gvisor_create(const std::string& root, const std::string& id, const Config& cfg,
                  const std::vector<std::string>& global_args, const std::vector<std::string>& args);

/// Any other command for a gVisor container: runs runsc with the recorded
/// flags, `global_args` (--log, --log-format) and `args` (the command word
/// and its arguments), the caller's stdio passed through. Returns runsc's exit
/// status; after a successful `delete` the marker is removed.
int gvisor_command(const std::string& root, const std::string& id, const std::vector<std::string>& global_args,
                   const std::vector<std::string>& args);

}  // namespace sbx::ocirt
