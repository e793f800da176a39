// NVIDIA GPUs for a sandbox, without the NVIDIA Container Toolkit: find the
// kernel driver's GPUs, device nodes and matching user-space driver files on
// the host (discover), pick GPUs by `--gpus` (select), and add exactly those
// to a SandboxSpec (apply). Nothing here runs code in the sandbox; the runtime
// honours the spec fields (see apply_gpus for the list).
//
// Follows what libnvidia-container / nvidia-container-toolkit do for the
// "compute,utility" driver capabilities: device nodes /dev/nvidiactl,
// /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset and
// /dev/nvidia<minor> of each selected GPU; the driver libraries listed in
// kDriverLibraries at their host paths; the utility binaries; the
// nvidia-persistenced socket.
#pragma once
#include <string>
#include <vector>

#include "gpu/host_root.h"
#include "spec/sandbox_spec.h"

namespace sbx::gpu {

/// One GPU as the kernel driver reports it in
/// /proc/driver/nvidia/gpus/<bus>/information.
struct GpuInfo {
  int index = 0;             ///< position in PCI bus order = nvidia-smi / NVML index
  std::string model;         ///< "NVIDIA H100 80GB HBM3"
  std::string uuid;          ///< "GPU-5a1d…" ("" on drivers that don't report it)
  std::string bus_location;  ///< "0000:3b:00.0"
  int minor = -1;            ///< "Device Minor": the node is /dev/nvidia<minor>
  std::string device_path() const { return "/dev/nvidia" + std::to_string(minor); }
};

/// A file of the host driver to bind into the sandbox.
struct DriverFile {
  std::string host_path;       ///< absolute path relative to the HostRoot
  std::string container_path;  ///< where it appears in the sandbox
};

/// Everything found on the host. Paths are absolute and relative to the
/// HostRoot they were discovered under.
struct NvidiaHost {
  std::string driver_version;           ///< kernel module version, "550.54.15"
  std::vector<GpuInfo> gpus;            ///< in index order
  std::vector<std::string> control_nodes;  ///< present ones of nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset
  std::vector<std::string> caps_nodes;  ///< /dev/nvidia-caps/* (MIG config/monitor; not given by --gpus)
  std::vector<DriverFile> libraries;    ///< versioned driver libraries, e.g. .../libcuda.so.550.54.15
  std::vector<std::string> library_dirs;  ///< directories of `libraries` (for ldconfig in the sandbox)
  std::vector<DriverFile> binaries;     ///< nvidia-smi, ... mounted at /usr/bin/<name>
  std::string persistenced_socket;      ///< "/run/nvidia-persistenced/socket" or ""
};

/// Library name stems (without ".so.<version>") of the compute and utility
/// driver capabilities, as nvidia-container-toolkit lists them. The first two
/// are required.
extern const std::vector<std::string> kDriverLibraries;
/// Utility and compute binaries bound into the sandbox when present.
extern const std::vector<std::string> kDriverBinaries;

/// Where discover looks, all relative to `root`.
struct DiscoverOptions {
  HostRoot root;
  std::string ldcache = "/etc/ld.so.cache";
  /// The driver's own directories, searched after the ld.so cache (the GPU
  /// operator and many cloud images install the driver there, uncached).
  std::vector<std::string> driver_lib_dirs = {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"};
  std::vector<std::string> bin_dirs = {"/usr/local/nvidia/bin", "/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"};
};

/// Reads the kernel module version from /proc/driver/nvidia/version text (the
/// first token of the "NVRM version:" line that looks like N.N[.N]). Throws
/// sbx::Error when there is none.
std::string parse_driver_version(const std::string& version_file_text, const std::string& what);

/// Parses one /proc/driver/nvidia/gpus/*/information file ("Key: value"
/// lines). Throws sbx::Error when "Device Minor" is missing or not a number.
GpuInfo parse_gpu_information(const std::string& text, const std::string& what);

/// Finds the NVIDIA driver under `opts.root`. Throws sbx::Error:
///  - "no NVIDIA driver found: /proc/driver/nvidia/version is missing ..." when
///    the kernel module is not loaded;
///  - when /dev/nvidiactl or a GPU's /dev/nvidia<minor> is missing or not a
///    device node;
///  - "NVIDIA driver libraries missing: libcuda.so.<ver> not found ..." when a
///    required library is not in the ld.so cache nor the driver directories;
///  - "NVIDIA driver library version X does not match the kernel module Y" when
///    a required library exists only in another version (a driver upgrade
///    without reboot, or a container image's stale copy).
NvidiaHost discover_nvidia(const DiscoverOptions& opts = {});

/// Like discover_nvidia but returns false instead of throwing when there is no
/// driver at all (for `sbx info`); other errors still throw.
bool nvidia_present(const HostRoot& root);

/// Chooses GPUs by a `--gpus` value: "all", "N", "N,M,…", "GPU-<uuid>[,…]",
/// docker's "device=0,1" / "device=GPU-…" and "count=N" / "count=all" (the
/// first N in index order), and "none"/"void" (an empty selection). Quotes
/// around the whole value or the device list (docker's '"device=0,1"') are
/// accepted. Returns the GPUs in the order given, without duplicates. Throws
/// sbx::Error for an index out of range ("GPU index 3 is out of range: this
/// host has 2 GPUs (0-1)"), an unknown UUID, a count larger than the host has,
/// or a malformed value.
std::vector<GpuInfo> select_gpus(const NvidiaHost& host, const std::string& spec);

/// Adds the selected GPUs to `spec` (native and gVisor --nvproxy backends):
///  - spec.devices: /dev/nvidia<minor> of each selected GPU and the present
///    control nodes, with their host (major, minor) and mode;
///  - spec.resources.devices: one allow rule "c major:minor rwm" per node;
///  - spec.mounts: read-only binds of each driver library at its host path,
///    each binary at /usr/bin/<name>, and the persistenced socket;
///  - spec.ldconfig_dirs: the library directories, so the runtime runs
///    ldconfig in the sandbox (which also makes the soname links such as
///    libcuda.so.1 -> libcuda.so.<version>);
///  - spec.process.env: NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES both
///    set to the selected GPUs' UUIDs, comma-separated (indices 0..n-1 when the
///    driver reports no UUIDs): UUIDs mean the same GPU whatever the order
///    CUDA enumerates in (CUDA_DEVICE_ORDER), and the sandbox sees only these
///    GPUs anyway. NVIDIA_DRIVER_CAPABILITIES=compute,utility (what is given).
/// With an empty selection only NVIDIA_VISIBLE_DEVICES=void is set.
/// Host paths are joined to `root` for mount sources and node stat.
void apply_gpus(const NvidiaHost& host, const std::vector<GpuInfo>& gpus, const HostRoot& root, SandboxSpec& spec);

}  // namespace sbx::gpu
