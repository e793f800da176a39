// Per-sandbox state under the run root (default /run/sbx):
//   RUN_ROOT/<id>/state.json   {"id","name","image_id","image_ref","pid","pid_start",
//                               "created","runtime","status","cgroups":[...]}
// written atomically. Other commands read it: `sbx rmi` refuses to remove an
// image a live sandbox uses; `sbx gc` removes the dirs of dead sandboxes.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sbx::runtime {

struct SandboxState {
  std::string id;
  std::string name;
  std::string image_id;
  std::string image_ref;
  std::string runtime = "native";
  std::string status = "running";
  pid_t pid = 0;             ///< host pid of the sandbox's init
  uint64_t pid_start = 0;    ///< its start time (/proc/PID/stat field 22), against pid reuse
  int64_t created_ms = 0;    ///< unix time in ms
  std::vector<std::string> cgroups;
};

/// Writes DIR/state.json atomically. Throws sbx::Error.
void write_state(const std::string& dir, const SandboxState& st);

/// Reads DIR/state.json. Throws sbx::Error when missing or malformed.
SandboxState read_state(const std::string& dir);

/// Start time of a process (clock ticks since boot), 0 when it does not exist.
uint64_t process_start_time(pid_t pid);

/// True when the state's init process still exists (same pid and start time).
bool state_alive(const SandboxState& st);

/// Removes RUN_ROOT/<id> dirs whose sandbox is gone (no live init), and stale
/// sandbox cgroups (runtime/cgroups.h). Returns the removed paths. No throw.
std::vector<std::string> gc(const std::string& run_root);

}  // namespace sbx::runtime
