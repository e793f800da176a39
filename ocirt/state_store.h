// sbx-runc's record of its containers, under the runtime root given with
// --root (default /run/sbx-runc): ROOT/<id>/state.json (what this file reads
// and writes), ROOT/<id>/config.json (the bundle's, as create read it) and
// ROOT/<id>/exec.fifo (present from create until start). There is no daemon:
// the status is derived each time from the init's pid (checked against its
// start time, so a reused pid is not mistaken for it), the fifo and the
// freezer, as runc does (runtime-spec runtime.md "State").
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sbx::ocirt {

/// What create records about a container.
struct ContainerState {
  std::string id;
  std::string bundle;        ///< absolute
  std::string oci_version;   ///< config.json's
  pid_t pid = 0;             ///< host pid of the container's process
  uint64_t pid_start = 0;    ///< its start time (/proc/PID/stat field 22)
  std::string created;       ///< RFC 3339, UTC
  std::vector<std::string> cgroup_dirs;
  std::map<std::string, std::string> annotations;
};

/// runc's id rule: [A-Za-z0-9_+.-]+, at most 1024 bytes, not "." or "..".
/// Throws sbx::Error otherwise.
void check_id(const std::string& id);

/// ROOT/<id>.
std::string container_dir(const std::string& root, const std::string& id);

/// Writes ROOT/<id>/state.json atomically (tmp + rename). Throws sbx::Error.
void save_state(const std::string& root, const ContainerState& st);

/// Reads ROOT/<id>/state.json. Throws sbx::Error "container "ID" does not
/// exist" (the wording podman and containerd look for) when it is not there.
ContainerState load_state(const std::string& root, const std::string& id);

/// Ids of every container under ROOT (sorted), empty when ROOT is missing.
std::vector<std::string> list_ids(const std::string& root);

/// "creating", "created", "running", "paused" or "stopped", now.
std::string current_status(const std::string& root, const ContainerState& st);

/// Whether `pid` is alive and still the process that started at `start`.
bool same_process(pid_t pid, uint64_t start) noexcept;

/// /proc/PID/stat field 22 (start time in clock ticks), 0 when it is gone.
uint64_t process_start_time(pid_t pid) noexcept;

/// The runtime-spec state JSON (ociVersion, id, status, pid, bundle,
/// annotations) as `state` prints it and hooks read it on stdin; the pid is
/// left out once stopped. `pretty`: indented as runc prints it.
std::string state_json(const ContainerState& st, const std::string& status, bool pretty);

/// RFC 3339 time of now, UTC, with nanoseconds (as runc's "created").
std::string now_rfc3339();

}  // namespace sbx::ocirt
