#!/usr/bin/env bash
# ctest entry for the adversarial suite (tests/adversarial/run.sh): every case
# on the native backend (user namespace, the default), the cases that touch
# the start path again with --userns host, then everything on gVisor where
# this sbx has `run --runtime` (run.sh reports N/A otherwise). The loop of
# sandboxes defaults to 1000 here; SBX_ADV_LOOPS overrides it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SBX=${SBX:?SBX must point at the built sbx binary}
rc=0
bash "$here/../adversarial/run.sh" --runtime native --loop "${SBX_ADV_LOOPS:-1000}" || rc=1
bash "$here/../adversarial/run.sh" --runtime native --userns host --loop 100 \
  info syscalls devices masked fds hostread robind volume_setid exe hostile_rootfs disk created cp_out \
  vsock ids names mount_errors snapshot_symlink end_reason serve_racer bounds loop || rc=1
if command -v runsc >/dev/null && [ "${SBX_ADV_GVISOR:-1}" = 1 ]; then
  bash "$here/../adversarial/run.sh" --runtime gvisor --loop "${SBX_ADV_GVISOR_LOOPS:-20}" || rc=1
fi
exit $rc
