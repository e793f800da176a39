// /proc/PID/mountinfo (proc(5)): the mounts a process sees, read by what
// must find a sandbox's root overlay (its upper dir, its image layers) or
// tell its own mounts from binds of host files (CRIU's externals).
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// One line of a mountinfo file (proc(5), "/proc/pid/mountinfo").
struct MountInfoLine {
  int id = 0;                 ///< mount id
  int parent = 0;             ///< parent mount id
  std::string dev;            ///< "MAJOR:MINOR" of the file system
  std::string root;           ///< the mount's root within its file system (octal escapes decoded)
  std::string point;          ///< where it is mounted, relative to the reader's root (decoded)
  std::string fstype;         ///< e.g. "overlay"
  std::string source;         ///< mount source, as the kernel shows it
  std::string super_options;  ///< per-superblock options ("lowerdir=…,upperdir=…")
};

/// Parses mountinfo text, in order; malformed lines are skipped. No throw.
std::vector<MountInfoLine> parse_mountinfo(const std::string& text);

/// parse_mountinfo of /proc/PID/mountinfo (pid 0: /proc/self). Throws
/// sbx::Error naming the file when it cannot be read (the process is gone).
std::vector<MountInfoLine> read_mountinfo(int pid);

}  // namespace sbx::runtime
