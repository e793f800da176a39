#!/usr/bin/env bash
# Build hardening of the sbx binary, checked like checksec does, with readelf:
# PIE, full RELRO (GNU_RELRO + BIND_NOW), non-executable stack, stack
# protector (__stack_chk_fail) and FORTIFY (__*_chk calls), plus the compile
# flags in compile_commands.json (_FORTIFY_SOURCE=3); the same ELF checks
# for the static sbx-helper built beside it. A fully static build
# (-DSBX_STATIC=ON) is not PIE and has no dynamic section: those two checks
# are reported as skipped for it, not passed.
set -uo pipefail
SBX=${SBX:?SBX must point at the built sbx binary}
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
skip() { echo "skip $*"; }

# The ELF checks, for sbx and for the static helper program it embeds
# (tools/sbx-helper.cpp, linked beside it; not in sanitizer builds).
check_elf() {  # BIN LABEL
  local bin=$1 l=$2 hdr dyn phdr syms static=0 stack nchk
  hdr=$(readelf -hW "$bin")
  dyn=$(readelf -dW "$bin" 2>/dev/null)
  phdr=$(readelf -lW "$bin")
  syms=$(readelf -sW --dyn-syms "$bin" 2>/dev/null; readelf -sW "$bin" 2>/dev/null)
  grep -q INTERP <<<"$phdr" || static=1
  if [ $static = 1 ]; then
    # -static-pie (CMakeLists.txt) is still position-independent (ELF type DYN).
    if grep -q 'Type: *DYN' <<<"$hdr"; then ok "$l: PIE (static-pie)"; else skip "$l: PIE: static binary"; fi
    skip "$l: BIND_NOW: static binary (no dynamic relocations to bind)"
  else
    grep -q 'Type: *DYN' <<<"$hdr" && ok "$l: PIE" || bad "$l: PIE: ELF type is not DYN"
    grep -Eq 'BIND_NOW|Flags:.*NOW' <<<"$dyn" && ok "$l: BIND_NOW (full RELRO)" || bad "$l: BIND_NOW missing"
  fi
  grep -q GNU_RELRO <<<"$phdr" && ok "$l: GNU_RELRO" || bad "$l: GNU_RELRO segment missing"
  stack=$(grep GNU_STACK <<<"$phdr")
  if [ -z "$stack" ]; then bad "$l: GNU_STACK missing (stack may be executable)"
  elif grep -q 'RWE' <<<"$stack"; then bad "$l: executable stack: $stack"
  else ok "$l: non-executable stack"; fi
  grep -q '__stack_chk_fail' <<<"$syms" && ok "$l: stack protector" || bad "$l: no __stack_chk_fail: built without -fstack-protector?"
  nchk=$(grep -Eo '__[a-z_]+_chk\b' <<<"$syms" | sort -u | wc -l)
  [ "$nchk" -gt 0 ] && ok "$l: FORTIFY ($nchk distinct __*_chk functions)" || bad "$l: no __*_chk functions: built without _FORTIFY_SOURCE?"
}
check_elf "$SBX" sbx
helper="$(dirname "$SBX")/sbx-helper"
if [ -f "$helper" ]; then
  check_elf "$helper" sbx-helper
  # What sbx embeds is that file, byte for byte (its end and start symbols
  # bracket a copy): its size is in sbx's symbol table.
  size=$(readelf -sW "$SBX" 2>/dev/null | awk '$8 == "sbx_helper_image_size" {print "yes"}')
  [ -n "$size" ] && ok "sbx embeds sbx-helper" || bad "sbx-helper was built but sbx does not embed it (no sbx_helper_image_size)"
elif grep -q 'SBX_SANITIZE:BOOL=ON' "$(dirname "$SBX")/CMakeCache.txt" 2>/dev/null; then
  skip "sbx-helper: sanitizer build (sbx runs a copy of itself)"
else
  bad "no sbx-helper beside $SBX"
fi

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
