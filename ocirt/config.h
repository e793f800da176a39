// A bundle's config.json as an OCI runtime (sbx-runc) must honour it.
//
// Spec: https://github.com/opencontainers/runtime-spec/blob/v1.1.0/config.md
// and config-linux.md. The reading is sbx's one config.json reader
// (oci/runtime_config.h parse_runtime_config), in config.json's own terms:
// the mounts as given (no defaults added), namespaces joined by path, the
// seccomp profile, every capability set, all hook stages. What this file adds
// is sbx-runc's judgement: a field the spec defines that sbx-runc cannot
// honour is refused by name, so that `create` fails rather than run a
// container weaker than asked for; values the spec says must map to a kernel
// interface are checked here (rlimit types, namespace and device types,
// propagation), and unknown capability names are logged and left out
// (runtime-spec 1.1). Unknown properties are ignored, as config.md requires.
#pragma once
#include <string>
#include <string_view>

#include "oci/runtime_config.h"
#include "spec/cgroup_limits.h"
#include "spec/seccomp_profile.h"

namespace sbx::ocirt {

using Namespace = oci::RuntimeNamespace;
using Capabilities = oci::RuntimeCapabilities;
using Process = oci::RuntimeProcess;
using Hooks = oci::RuntimeHooks;
using Config = oci::RuntimeConfig;
/// linux.resources, in the terms of sbx's one cgroup writer (runtime/linux/cgroup_control.h).
using Resources = spec::CgroupLimits;
/// linux.seccomp, in sbx's one profile type (runtime/linux/seccomp.h loads it).
using Seccomp = spec::SeccompProfile;
using SeccompRule = spec::SeccompRule;
using SeccompArg = spec::SeccompArg;

/// Parses config.json text; `bundle` (an absolute directory) resolves a
/// relative root.path. Throws sbx::Error naming the field ("config.json:
/// linux.intelRdt: not supported by sbx-runc") for malformed input, a field
/// sbx-runc cannot honour, or a value with no kernel interface.
Config parse_config(std::string_view json_text, const std::string& bundle);

/// Parses one "process" object (config.json's, or an exec --process file)
/// and checks it as parse_config does. `where` names it in errors. Throws
/// sbx::Error.
Process parse_process(std::string_view json_text, const std::string& where);

/// Parses a linux.resources object (update --resources). Throws sbx::Error.
Resources parse_resources(std::string_view json_text);

}  // namespace sbx::ocirt
