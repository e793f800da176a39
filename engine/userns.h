// Whether a sandbox's ids are its own: the decision every front end shares.
#pragma once
#include "spec/sandbox_spec.h"

namespace sbx::engine {

/// What a front end was asked about the sandbox's ids (`--userns`, Docker's
/// HostConfig.UsernsMode): Auto, sbx's default, or Host, the host's ids.
enum class UsernsMode {
  Auto,  ///< its own user namespace (uid 0 inside is an unprivileged host id) where it can have one
  Host,  ///< none: uid 0 inside is host root (`--userns host`, UsernsMode "host")
};

/// The one decision, for every front end (CLI, Docker API, /sbx/v1, E2B,
/// batch): whether a native sandbox gets its own user namespace
/// (runtime/linux/userns.h). Yes unless `mode` is Host or the spec shares the
/// host's network namespace (that namespace belongs to the host's user
/// namespace, so the sandbox could not mount its own /sys; as podman).
/// Published ports and private networks keep it. gVisor ignores it (runsc
/// runs the sandbox as its own user). No throw.
bool use_userns(const SandboxSpec& spec, UsernsMode mode) noexcept;

}  // namespace sbx::engine
