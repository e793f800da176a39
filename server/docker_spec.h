// Docker's container config (the body of POST /containers/create: Config
// fields at the top, HostConfig inside) → an sbx SandboxSpec.
// Docker reference: ContainerCreateRequest in the Engine API (v1.44).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/userns.h"
#include "oci/image.h"
#include "spec/sandbox_spec.h"

namespace sbx::server {

/// The spec for container `id` (`name` may be empty) from its create body
/// `cfg`, the image `img` and its layer dirs: Entrypoint/Cmd over the image's,
/// Env, WorkingDir, User, Hostname, Labels; HostConfig Binds (HOST:CTR[:ro]),
/// Mounts (type bind/tmpfs), Memory (bytes), NanoCpus, PidsLimit,
/// NetworkMode ("none", "default", "bridge" → sbx's loopback-only network;
/// "host"), ReadonlyRootfs, Runtime ("gvisor"/"runsc"; also the label
/// sbx.runtime). Default bounds as `sbx create`. Throws sbx::Error (the
/// server answers 400) for what sbx cannot do: a named volume, a network
/// other than these, a relative bind path.
/// `default_runtime`: the backend when the config names none (sbx serve --runtime).
SandboxSpec spec_from_docker(const nlohmann::json& cfg, const oci::ImageRecord& img,
                             const std::vector<std::string>& layer_dirs, const std::string& id,
                             const std::string& name, const std::string& default_runtime = "native");

/// HostConfig.DeviceRequests (GPUs: Count -1 → --gpus all, Count N →
/// count=N, DeviceIDs → device=…; Driver "" or "nvidia"; Capabilities must
/// include "gpu" when given) and HostConfig.Devices (PathOnHost → --device)
/// as sbx's GPU request, which engine::Engine::apply_gpus turns into CDI
/// edits of the spec (gpu/). nullopt when the config asks for neither.
/// Throws sbx::Error for a driver or capability sbx does not know.
struct GpuAsk {
  std::string gpus;
  std::vector<std::string> devices;
};
std::optional<GpuAsk> gpus_from_docker(const nlohmann::json& cfg);

/// HostConfig.UsernsMode as the engine's mode (engine/userns.h, which decides
/// with the spec): "" or absent → Auto (a user namespace of the container's
/// own, published ports and all), "host" → Host (none). Throws sbx::Error (the
/// server answers 400) for any other value, e.g. podman's "auto" or
/// "keep-id", which sbx does not have.
engine::UsernsMode userns_mode_from_docker(const nlohmann::json& cfg);

/// A JSON string array, or a single string (Docker accepts both for Cmd and
/// Entrypoint), or empty for null/absent.
std::vector<std::string> string_list(const nlohmann::json& j);

}  // namespace sbx::server
