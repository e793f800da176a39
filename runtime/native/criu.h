// CRIU (https://criu.org), the mechanism of native memory snapshots: where
// sbx finds it, what `criu check` says of this host (once per process), and
// why a native checkpoint cannot be taken when it cannot.
//
// sbx looks in its own prefix first (/usr/local/lib/sbx/criu/sbin/criu, where
// .ci/criu-build.sh installs CRIU 4.1.1 built from Debian 13's source), then
// on PATH. Debian 12's CRIU 3.17 fails `criu check` on newer kernels (it
// cannot parse their vDSO layout; CRIU 4.1 can).
#pragma once

#include <map>
#include <string>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// sbx's own prefix for CRIU (bin: kCriuPrefix + "/sbin/criu").
inline constexpr const char* kCriuPrefix = "/usr/local/lib/sbx/criu";

/// What sbx found of CRIU on this host.
struct CriuInfo {
  std::string path;     ///< the criu binary; empty: none found
  std::string version;  ///< "4.1.1" (from `criu --version`); empty when unknown
  bool works = false;   ///< `criu check` passed
  std::string error;    ///< !works: why, for people (none found, or check's first error line)
  /// `criu check --feature F` for the features restore, fork and standby care
  /// about: "uffd-noncoop" (lazy restore, --lazy-pages), "mem_dirty_track"
  /// (pre-dump, soft-dirty bits), "pidfd_store", "timens", "external_net_ns"
  /// (restore into a network namespace sbx made), "clone3_set_tid" (pids
  /// restored without a race): name -> supported. Empty when !works.
  std::map<std::string, bool> features;
};

/// Finds CRIU: $SBX_CRIU (a path), then kCriuPrefix/sbin/criu, then PATH
/// (criu in /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin).
/// Empty when none is executable. No throw.
std::string find_criu();

/// find_criu(), its version, `criu check` and its features, probed once per
/// process (later calls return the same object). No throw.
const CriuInfo& criu_info();

/// One line for `sbx info`: "CRIU 4.1.1 at PATH (lazy_pages, …)" or why
/// memory snapshots of native sandboxes are not available.
std::string describe_criu(const CriuInfo& info);

/// What in `spec` no CRIU can checkpoint, for people ("it has NVIDIA GPUs
/// (/dev/nvidia0) …"); empty when nothing is known to stand in the way.
/// Checked before anything is written (Backend::check_checkpoint).
std::string criu_spec_blocker(const SandboxSpec& spec);

/// Throws sbx::Error explaining why native (CRIU) memory snapshots cannot work
/// on this host: CRIU missing, or `criu check` failing (its first error line is
/// quoted, with the vDSO hint for Debian 12's CRIU 3.17), suggesting
/// .ci/criu-build.sh and `--runtime gvisor`. When `criu check` passes it
/// still throws (naming the CRIU found); callers ask only when it does not
/// (runtime/native/criu_checkpoint.h refuse_native_checkpoint).
[[noreturn]] void fail_native_checkpoint();

}  // namespace sbx::runtime
