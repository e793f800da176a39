// What the runsc that sbx found can do. gVisor grew features sbx relies on
// between Debian 12's runsc (release 20221219) and bookworm-backports'
// (20240729); sbx keeps working with both and lifts its workarounds only
// where the found runsc has the feature. The answer comes from probing the
// binary itself (`runsc --version` and `runsc flags`, about 25 ms together),
// cached per binary path, size and mtime for the life of the process: only
// commands that need it (info, --gpus, exec -t without a terminal) pay.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::runtime {

struct RunscFeatures {
  std::string path;          ///< the binary probed
  std::string version;       ///< first line of `runsc --version` ("runsc version 0.0~20240729.0")
  uint32_t release = 0;      ///< release date as YYYYMMDD (20240729), 0 if the version names none
  /// `--nvproxy`: NVIDIA GPUs pass through to the sandbox (gVisor's nvproxy).
  bool nvproxy = false;
  /// `--overlay2=root:MEDIUM,size=N`: the root overlay's writes are bounded
  /// (so `sbx create --runtime gvisor --disk` can bound a memory-backed overlay).
  bool overlay_size = false;
  /// `runsc exec --console-socket` gives the exec'd process a pty of its own
  /// even when runsc exec's stdio is no terminal (20221219 hands it runsc
  /// exec's own stdio instead, and the output is lost). No flag shows this:
  /// it is known by release (kExecTtyRelease; tests/integration/test_run_tty.sh
  /// checks whichever answer the found runsc gets).
  bool exec_tty = false;
  /// The NVIDIA driver versions nvproxy supports ("550.90.07"), from `runsc
  /// nvproxy list-supported-drivers`; nvproxy passes through only these (a
  /// newer driver's ioctls are refused when the sandbox starts). Empty when
  /// runsc has no nvproxy or no such subcommand: then unknown, not "none".
  std::vector<std::string> nvproxy_drivers;
};

/// Parses `runsc nvproxy list-supported-drivers`: one driver version per line
/// ("535.104.05"); other lines (errors, usage text) are skipped. Pure.
std::vector<std::string> parse_nvproxy_drivers(std::string_view list_output);

/// Whether `f` lets nvproxy pass through the host's NVIDIA driver
/// `driver_version` (the kernel module's, "580.159.04"): true when its list
/// names it or the list is unknown (empty).
bool nvproxy_supports_driver(const RunscFeatures& f, const std::string& driver_version);

/// The first runsc release whose `exec --console-socket` works without a
/// terminal on runsc exec's stdio. None known yet: 0.0~20221219.0 always loses
/// the output, and 0.0~20240729.0 still loses it in about half the runs
/// (measured here: `sbx exec -t ID sh -c 'echo out-42' </dev/null`, status 1,
/// nothing printed, alternately). Set it to the first release that passes
/// test_run_tty.sh's exec -t checks many times in a row.
inline constexpr uint32_t kExecTtyRelease = UINT32_MAX;

/// Parses the probes' output: `version_out` from `runsc --version`,
/// `flags_out` from `runsc flags` (its flag list with help text). Pure.
RunscFeatures parse_runsc_features(std::string_view version_out, std::string_view flags_out);

/// The features of the runsc at `runsc` (a path, as find_runsc returns),
/// probed once per path+size+mtime in this process. Throws sbx::Error when
/// the binary cannot be stat'ed or `runsc --version` fails.
RunscFeatures runsc_features(const std::string& runsc);

/// "nvproxy yes, overlay-size no, exec-tty yes": the features as `sbx info`
/// prints them; with nvproxy's driver list known, "nvproxy yes (drivers up to
/// 550.90.07)".
std::string describe_runsc_features(const RunscFeatures& f);

}  // namespace sbx::runtime
