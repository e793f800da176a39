#!/usr/bin/env bash
# `--gpus` / `--device` end to end on a FAKE NVIDIA host: no GPU exists on the
# machines CI runs on, so tests/gpu/fake_host_e2e.sh builds a device tree that
# stands in for one (real char nodes at unused majors, cc-built libcuda, a real
# ld.so.cache) and checks the native path fully and the gVisor path (runsc
# --nvproxy, or the refusal on a runsc without it) up to the missing driver.
# The real-GPU check is tests/gpu/verify_on_gpu_host.sh. Exit: failed checks.
exec bash "${SBX_TEST_SRC:-$(dirname "$0")/../..}/tests/gpu/fake_host_e2e.sh"
