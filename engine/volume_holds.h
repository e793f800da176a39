// Volumes held by something that is not yet a sandbox: a Docker container
// created but never started holds the named volumes it will mount (docker
// refuses `volume rm` of them with "in use"), for as long as the process
// that holds them (sbx serve) lives, or until released.
//
// Anonymous volumes: each VOLUME path of a sandbox's image that none of its
// mounts covers gets a volume of its own with a random 64-hex name, labelled
// kAnonymousVolumeLabel, seeded with the image's files there (as a named
// volume is). Engine::run/create make them; they outlive the sandbox
// (dangling) unless its removal asks for them to go (`sbx rm -v`, Docker's
// DELETE ?v=1, AutoRemove), as docker does.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::engine {

class Engine;

/// The label docker (23+) gives anonymous volumes.
inline constexpr const char* kAnonymousVolumeLabel = "com.docker.volume.anonymous";

/// The VOLUME paths of image `image_id` in store `root` (its config's
/// Volumes), in order; empty for "" or an image without any. Reads the
/// config blob ROOT/blobs/sha256/ID; a missing or malformed one has none.
std::vector<std::string> image_volumes(const std::string& root, const std::string& image_id);

/// The spec annotation that carries the image's VOLUME paths into the
/// sandbox's spec (its config.json): a JSON array of absolute paths. The
/// engine sets it when it makes a sandbox; a spec that has it is not read
/// against the image config again (a Docker container started again, a
/// restart on the same layer).
inline constexpr const char* kImageVolumesAnnotation = "org.sbx.image-volumes";

/// The image VOLUME paths `spec` carries (kImageVolumesAnnotation), in
/// order; nullopt when it carries none or a malformed list. Reads nothing.
std::optional<std::vector<std::string>> carried_image_volumes(const SandboxSpec& spec);

/// The image VOLUME paths `spec` carries (kImageVolumesAnnotation), or, when
/// it carries none, those of its image in store `root` (image_volumes), which
/// are then recorded in the spec. No throw for a malformed annotation: the
/// image is read instead.
std::vector<std::string> spec_image_volumes(const std::string& root, SandboxSpec& spec);

/// Makes `spec`'s anonymous volumes: each volume mount without a source
/// gets a new one, and each image VOLUME path (spec_image_volumes) that no
/// mount covers a volume mount of a new one (a sandbox of spec.id made
/// before, a Docker container started again, keeps those its previous spec
/// names). Returns the names made (new ones only). Throws sbx::Error (the
/// store unwritable); then none of those it made is left.
std::vector<std::string> add_anonymous_volumes(Engine& engine, SandboxSpec& spec);

/// The anonymous volumes among `mounts` (a spec as the engine attached it:
/// binds of volumes' _data dirs under `root`), in order, each once. Reads
/// only those volumes' records.
std::vector<std::string> spec_anonymous_volumes(const std::string& root, const std::vector<spec::Mount>& mounts);

/// Drops `id`'s references to every volume of the store; returns the
/// anonymous ones among them. For a sandbox whose spec cannot be read (a
/// half-made one). No throw.
std::vector<std::string> detach_every_volume(Engine& engine, const std::string& id) noexcept;

/// Removes those of `names` that no sandbox uses any more (one still used
/// by another sandbox is kept, as docker's `rm -v`). Returns the removed
/// names. Throws sbx::Error when a removal fails for another reason.
std::vector<std::string> remove_unused_volumes(Engine& engine, const std::vector<std::string>& names);

/// Marks the named volumes among `mounts` (type "volume", engine/volumes.h)
/// in use by `id` while this process lives; unknown names are created, as
/// docker's container create does. Returns their names (all or nothing).
/// Throws sbx::Error (a bad name, the store unwritable). A later
/// Engine::create/run of sandbox `id` takes the references over.
std::vector<std::string> hold_volumes(Engine& engine, const std::string& id, const std::vector<spec::Mount>& mounts);

/// Drops `id`'s references to `names` (under the engine's root).
void release_volumes(Engine& engine, const std::string& id, const std::vector<std::string>& names) noexcept;

}  // namespace sbx::engine
