// HostRoot: where gpu/ looks for the host's driver files. "/" in production; a
// temporary directory standing in for "/" in tests (a fake device tree with
// real char device nodes, fake /proc/driver/nvidia files and fake libraries).
//
// Paths in a SandboxSpec built from discovery keep two sides apart: a mount's
// `source` and a device's host node are `join(p)` (a real path on this
// machine), while the path inside the sandbox is `p` itself. With root "/"
// both are the same, as the NVIDIA Container Toolkit does.
#pragma once
#include <string>
#include <string_view>

namespace sbx::gpu {

struct HostRoot {
  std::string path = "/";

  /// `abs` (an absolute host path such as "/dev/nvidia0") under this root.
  std::string join(std::string_view abs) const;

  /// Resolves symlinks of `abs` inside this root (absolute link targets are
  /// taken relative to the root, as chroot would), up to 40 links. Returns the
  /// resolved absolute path *relative to the root* (e.g.
  /// "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"), or "" when a component
  /// is missing or the links loop.
  std::string resolve(std::string_view abs) const;
};

}  // namespace sbx::gpu
