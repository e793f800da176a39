// gVisor and GPUs: runsc passes NVIDIA GPUs through only with its nvproxy
// feature (`runsc --nvproxy`, added in 2023). The gVisor backend asks here
// whether the installed runsc has it before adding --nvproxy to its command
// line; Debian 12's runsc (release 20221219) does not.
#pragma once
#include <string>
#include <string_view>

namespace sbx::runtime {

/// True when the output of `runsc flags` (or `runsc --help`, which lists flags
/// on newer releases) names the -nvproxy flag. Looks for the flag as a whole
/// word ("-nvproxy" / "--nvproxy"), not a prefix of another one.
bool runsc_output_has_nvproxy(std::string_view flags_output);

/// Whether the runsc at `runsc_path` (empty: found on $PATH, as
/// find_runsc) has --nvproxy: runsc_features, which checks
/// `runsc flags` with runsc_output_has_nvproxy. Throws sbx::Error when runsc
/// cannot be found or run at all.
bool runsc_supports_nvproxy(const std::string& runsc_path = "");

/// Throws sbx::Error ("--gpus with --runtime gvisor needs runsc with nvproxy
/// support: <path> (version ...) has none; upgrade gVisor ... or use the native
/// runtime") unless runsc_supports_nvproxy(runsc_path) (empty: $PATH); and,
/// when `host_driver_version` (the kernel module's, "580.159.04") is given,
/// unless nvproxy supports that driver (`runsc nvproxy
/// list-supported-drivers`; an unknown list passes).
void require_nvproxy(const std::string& runsc_path = "", const std::string& host_driver_version = "");

}  // namespace sbx::runtime
