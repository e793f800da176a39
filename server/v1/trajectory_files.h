// /sbx/v1 on trajectory FILES (docs/api.md "Trajectory files"):
// POST /sbx/v1/trajectories/{show,branch,replay}, the file uploaded as the
// body or named by ?path= under the one host directory the server allows
// (`sbx serve --trajectory-dir DIR`); unset, the server reads no trajectory
// file from its host. The server's socket is root's door to the host: a host
// path is the server's to allow, not the client's to choose.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "engine/trajectory_ops.h"
#include "server/http.h"

namespace sbx::server {

/// Sets the directory (made absolute; "" = none). Call before serving.
void set_v1_trajectory_dir(const std::string& dir);

/// The directory, or "" when the server reads no trajectory files by path.
const std::string& v1_trajectory_dir();

/// Answers POST /sbx/v1/trajectories/OP (op: show, branch, replay): reads
/// the trajectory (the spooled body, or ?path= resolved beneath the
/// trajectory dir with openat2 RESOLVE_BENEATH) before anything is made,
/// then shows it, branches it (query: step, count, name) or replays it
/// (image, until, keep, tolerate_regex, tolerate_path). `watch` is called
/// with each sandbox made (its reaper); `sandbox_json` gives a sandbox's
/// record. Throws V1Error (server/v1/sbx_v1.h): 400 a bad query or a
/// corrupt/hostile file, 403 a path outside the dir or no dir, 404 a
/// missing file; sbx::Error from the engine.
void v1_trajectory_file(engine::Engine& eng, Connection& c, const Request& r, const std::string& op,
                        const std::function<void(const std::string&)>& watch,
                        const std::function<nlohmann::json(const std::string&)>& sandbox_json);

/// A replay's answer (for files and for POST /sbx/v1/sandboxes/{id}/replay):
/// matched, first_divergence, steps, and the kept sandbox's record through
/// `sandbox` (null when none was kept). No throw.
nlohmann::json replay_json(const engine::trajectory::ReplayResult& res,
                           const std::function<nlohmann::json(const std::string&)>& sandbox);

}  // namespace sbx::server
