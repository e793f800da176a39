// The one host directory under which `sbx serve` reads trajectory files named
// by path (POST /sbx/v1/trajectories/…?path=, docs/api.md "Trajectories"):
// set by `sbx serve --trajectory-dir DIR`; unset, the server reads none (a
// client uploads the file instead). The server's socket is root's door to the
// host: a path is the server's to allow, not the client's to choose.
#pragma once
#include <string>

namespace sbx::server {

/// Sets the directory (made absolute; "" = none). Call before serving.
void set_v1_trajectory_dir(const std::string& dir);

/// The directory, or "" when the server reads no trajectory files by path.
const std::string& v1_trajectory_dir();

}  // namespace sbx::server
