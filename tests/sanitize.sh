#!/usr/bin/env bash
# Builds the whole unit-test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DSBX_SANITIZE=ON) into build-asan/ and runs it. Any sanitizer report fails
# the run (UBSan is made fatal with halt_on_error). Used by .ci/run. The sbx
# CLI is not built here (the unit tests link the library; ctest covers cli/).
#
#   tests/sanitize.sh [doctest args...]     e.g. tests/sanitize.sh -tc='*unpack*'
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SBX_ASAN_BUILD:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSBX_SANITIZE=ON >/dev/null
cmake --build "$build" --target sbx_unit_tests sbx_pause -j"${SBX_JOBS:-$(nproc)}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export SBX_TEST_SRC=$PWD
"$build/sbx_unit_tests" "$@"
