#!/usr/bin/env bash
# Build hardening of the sbx binary, checked like checksec does, with readelf:
# PIE, full RELRO (GNU_RELRO + BIND_NOW), non-executable stack, stack
# protector (__stack_chk_fail) and FORTIFY (__*_chk calls), plus the compile
# flags in compile_commands.json (_FORTIFY_SOURCE=3). A fully static build
# (-DSBX_STATIC=ON) is not PIE and has no dynamic section: those two checks
# are reported as skipped for it, not passed.
set -uo pipefail
SBX=${SBX:?SBX must point at the built sbx binary}
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
skip() { echo "skip $*"; }

hdr=$(readelf -hW "$SBX")
dyn=$(readelf -dW "$SBX" 2>/dev/null)
phdr=$(readelf -lW "$SBX")
syms=$(readelf -sW --dyn-syms "$SBX" 2>/dev/null; readelf -sW "$SBX" 2>/dev/null)
static=0
grep -q INTERP <<<"$phdr" || static=1

if [ $static = 1 ]; then
  # -static-pie (CMakeLists.txt) is still position-independent (ELF type DYN).
  if grep -q 'Type: *DYN' <<<"$hdr"; then ok "PIE (static-pie)"; else skip "PIE: static binary"; fi
  skip "BIND_NOW: static binary (no dynamic relocations to bind)"
else
  grep -q 'Type: *DYN' <<<"$hdr" && ok "PIE" || bad "PIE: ELF type is not DYN"
  grep -Eq 'BIND_NOW|Flags:.*NOW' <<<"$dyn" && ok "BIND_NOW (full RELRO)" || bad "BIND_NOW missing"
fi
grep -q GNU_RELRO <<<"$phdr" && ok "GNU_RELRO" || bad "GNU_RELRO segment missing"
stack=$(grep GNU_STACK <<<"$phdr")
if [ -z "$stack" ]; then bad "GNU_STACK missing (stack may be executable)"
elif grep -q 'RWE' <<<"$stack"; then bad "executable stack: $stack"
else ok "non-executable stack"; fi
grep -q '__stack_chk_fail' <<<"$syms" && ok "stack protector" || bad "no __stack_chk_fail: built without -fstack-protector?"
nchk=$(grep -Eo '__[a-z_]+_chk\b' <<<"$syms" | sort -u | wc -l)
[ "$nchk" -gt 0 ] && ok "FORTIFY ($nchk distinct __*_chk functions)" || bad "no __*_chk functions: built without _FORTIFY_SOURCE?"

# Compile flags, where the build left its compile_commands.json beside the binary.
cc="$(dirname "$SBX")/compile_commands.json"
if [ -f "$cc" ]; then
  if grep -q 'fsanitize=address' "$cc"; then
    skip "_FORTIFY_SOURCE: sanitizer build (ASan replaces it)"
  elif grep -q -- '-D_FORTIFY_SOURCE=3' "$cc" && ! grep -q -- '-D_FORTIFY_SOURCE=[12]' "$cc"; then
    ok "_FORTIFY_SOURCE=3 in every compile command"
  elif grep -q 'CMAKE_BUILD_TYPE=Debug' "$(dirname "$SBX")/CMakeCache.txt" 2>/dev/null; then
    skip "_FORTIFY_SOURCE: Debug build"
  else
    bad "_FORTIFY_SOURCE=3 not used by every compile command"
  fi
  grep -q -- '-fstack-clash-protection' "$cc" && ok "-fstack-clash-protection" || bad "-fstack-clash-protection missing"
else
  skip "compile flags: no compile_commands.json next to $SBX"
fi
exit $fail
