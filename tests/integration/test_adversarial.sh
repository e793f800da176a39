#!/usr/bin/env bash
# ctest entry for the adversarial suite (tests/adversarial/run.sh): every case
# on the native backend, then on gVisor where this sbx has `run --runtime`
# (run.sh reports N/A otherwise). The loop of sandboxes defaults to 1000 here;
# SBX_ADV_LOOPS overrides it (e.g. 100 for a quick local run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SBX=${SBX:?SBX must point at the built sbx binary}
rc=0
bash "$here/../adversarial/run.sh" --runtime native --loop "${SBX_ADV_LOOPS:-1000}" || rc=1
if command -v runsc >/dev/null; then
  bash "$here/../adversarial/run.sh" --runtime gvisor --loop "${SBX_ADV_GVISOR_LOOPS:-20}" || rc=1
fi
exit $rc
