// Docker's container config (the body of POST /containers/create: Config
// fields at the top, HostConfig inside) → an sbx SandboxSpec.
// Docker reference: ContainerCreateRequest in the Engine API (v1.44).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sandbox_options.h"
#include "engine/userns.h"
#include "oci/image.h"
#include "spec/sandbox_spec.h"

namespace sbx::server {

/// Docker's create body as the engine's options (engine/sandbox_options.h),
/// translated, nothing decided: Entrypoint/Cmd, Env, WorkingDir, User,
/// Hostname, Labels; HostConfig Binds, Mounts (bind/tmpfs), Tmpfs, Memory
/// (bytes), NanoCpus, PidsLimit, CapAdd/CapDrop, ReadonlyRootfs, NetworkMode
/// ("none", "default", "bridge" → loopback only, or private with
/// PortBindings; "host"; any other name: that user-defined network, with
/// NetworkingConfig.EndpointsConfig's other networks, their Aliases and
/// IPAMConfig.IPv4Address), Runtime (or the label sbx.runtime), UsernsMode,
/// DeviceRequests/Devices. Refuses (sbx::Error Unsupported, naming the
/// field) what sbx cannot honour safely when it is not the default:
/// Privileged, SecurityOpt (but no-new-privileges), Sysctls,
/// PidMode/IpcMode/UTSMode other than private, CgroupParent.
engine::SandboxOptions options_from_docker(const nlohmann::json& cfg, const std::string& id, const std::string& name);

/// The spec for container `id` (`name` may be empty) from its create body
/// `cfg` on the image `img` and its layer dirs: options_from_docker built by
/// the engine's builder (engine::build_sandbox), GPUs left out (they need the
/// host's devices: applied when the container starts). Throws sbx::Error
/// (the server answers 400) for what sbx cannot do.
/// `default_runtime`: the backend when the config names none (sbx serve --runtime).
/// (Inline: the translation above stays free of the engine's code, so the
/// fuzz harness of Docker's create body links it alone.)
inline SandboxSpec spec_from_docker(const nlohmann::json& cfg, const oci::ImageRecord& img,
                                    const std::vector<std::string>& layer_dirs, const std::string& id,
                                    const std::string& name, const std::string& default_runtime = "native") {
  engine::SandboxOptions o = options_from_docker(cfg, id, name);
  o.gpu = {};  // GPUs need the host's devices: applied when the container starts
  return engine::build_sandbox(o, engine::ResolvedImage{o.image, img.id, img.config, layer_dirs}, default_runtime)
      .spec;
}

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
