// The build parameters that both build endpoints of `sbx serve` take — the
// Docker API's POST /build (the classic builder's query) and POST
// /sbx/v1/build — translated into the engine's build::BuildOptions; each
// endpoint then streams the engine's events in its own wire form. One build
// flow: Engine::build, as `sbx build` calls it.
#pragma once
#include <string>

#include "engine/build/builder.h"
#include "server/http.h"

namespace sbx::server {

/// Most bytes of files one build context tar may unpack to (a gzip body of
/// 1 GiB could otherwise expand without bound).
inline constexpr uint64_t kMaxBuildContext = kMaxCopyStage;
/// Most bytes of a body that is a Dockerfile alone (not a tar).
inline constexpr uint64_t kMaxDockerfileBody = 4u << 20;

/// BuildOptions from `r`: its body (spooled to r.body_file) is the context, a
/// tar (plain, gzip or zstd; unpacked as hostile input within
/// kMaxBuildContext) or a Dockerfile alone (an empty context); its query:
///   t (repeated)     NAME[:TAG] for the result
///   dockerfile       the Dockerfile's path inside the context (default "Dockerfile")
///   buildargs        JSON object {"K": "V"} (a null value: not given)
///   labels           JSON object {"K": "V"}: added to the image's config
///   nocache          reuse nothing from the build cache
///   pull             "1"/"true"/"always": pull every base image; "never";
///                    absent, "0", "false", "missing": pull missing ones
///   target           the stage to build
///   networkmode      RUN steps' network: default/bridge/private, none, host
///   platform         only the host's
/// rm, forcerm and resource parameters are accepted and ignored (a step's
/// sandbox is always removed; its bounds are `sbx build`'s). `remote` (URL
/// contexts), `squash` and BuildKit (version=2) are refused. The callbacks
/// (on_event, pull progress, cancelled) are the caller's; signals are never
/// forwarded (a server's, not the build's). Throws sbx::Error
/// (InvalidArgument or Unsupported: a 400) for a bad parameter, before
/// anything is built.
build::BuildOptions build_options(const Request& r);

/// Whether the peer of the connected socket `fd` has closed its side (a
/// build for a client that left stops at its next check). Never blocks.
bool peer_closed(int fd);

/// `ref` (a name from the `t` parameter) as Docker prints it in
/// "Successfully tagged …": with ":latest" when it names no tag or digest.
std::string tagged_name(const std::string& ref);

}  // namespace sbx::server
