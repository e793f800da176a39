#!/usr/bin/env bash
# `cmake --install` puts everything a user types where a shell finds it —
# sbx, sbx-runc, sbx-pause, a man page per command, bash/zsh/fish completions,
# the Python SDK — and the uninstall target removes exactly that. Into a
# DESTDIR of the test's own: the machine's /usr/local is not touched.
source "$(dirname "$0")/../sandbox_lib.sh"
B=$(dirname "$SBX")
D=$T/destdir
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")
site=$(sed -n 's/^SBX_PYTHON_SITEDIR:PATH=//p' "$B/CMakeCache.txt")
# The build's own manifest belongs to setup.sh's install: work on a copy of it.
[ -f "$B/install_manifest.txt" ] && cp "$B/install_manifest.txt" "$T/manifest.saved"
DESTDIR=$D cmake --install "$B" >"$T/install.log" 2>&1
check "cmake --install succeeds" test $? = 0
check "sbx installed in bin" test -x "$D$prefix/bin/sbx"
check "sbx-runc installed in bin" test -x "$D$prefix/bin/sbx-runc"
check "sbx-pause installed in libexec/sbx" test -x "$D$prefix/libexec/sbx/sbx-pause"
check "the installed sbx runs" bash -c "'$D$prefix/bin/sbx' --version | grep -q '^sbx version'"
for m in "$SBX_TEST_SRC"/man/*.1; do
  check "man page $(basename "$m") installed" test -f "$D$prefix/share/man/man1/$(basename "$m")"
done
check "bash completion installed" test -f "$D$prefix/share/bash-completion/completions/sbx"
check "zsh completion installed" test -f "$D$prefix/share/zsh/vendor-completions/_sbx"
check "fish completion installed" test -f "$D$prefix/share/fish/vendor_completions.d/sbx.fish"
if [ -n "$site" ]; then
  check "the SDK installed into python3's site dir" test -f "$D$site/sbx/__init__.py" -a -f "$D$site/sbx/py.typed"
  check "the installed SDK imports" env -u PYTHONPATH PYTHONPATH="$D$site" PYTHONDONTWRITEBYTECODE=1 \
    python3 -c "import sbx, os; assert os.path.dirname(sbx.__file__) == '$D$site/sbx', sbx.__file__; sbx.Sandbox"
fi
DESTDIR=$D cmake --build "$B" --target uninstall >"$T/uninstall.log" 2>&1
check "the uninstall target succeeds" test $? = 0
left=$(find "$D" -type f -o -type l)
check "uninstall removes every installed file" test -z "$left"
[ -z "$left" ] || echo "left: $left"
check "uninstall removes the SDK's and libexec's sbx directories" \
  bash -c "! find '$D' -type d -name sbx | grep -q ."
if [ -f "$T/manifest.saved" ]; then cp "$T/manifest.saved" "$B/install_manifest.txt"; else rm -f "$B/install_manifest.txt"; fi
finish
