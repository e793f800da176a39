#!/usr/bin/env bash
# sbx rename: a running sandbox keeps running under its new name; the old
# name is free afterwards and the new one taken; a name in use, an invalid
# name, the name it has and an unknown sandbox are refused (exit 125) with
# nothing changed.
source "$(dirname "$0")/../sandbox_lib.sh"
trap 'for id in $($SBX ps -aq --no-trunc 2>/dev/null); do $SBX rm -f "$id" >/dev/null 2>&1; done; rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null' EXIT

id=$($SBX create --name ren-a $BB -- sleep 600)
$SBX create --name ren-b $BB -- sleep 600 >/dev/null
expect_rc "rename ren-a ren-c" 0 $SBX rename ren-a ren-c
check "the new name resolves to it" test "$($SBX inspect ren-c | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Id"])')" = "$id"
check "ps shows the new name" grep -qx ren-c <<<"$($SBX ps --format '{{.Names}}')"
check "ps no longer shows the old one" not_grep ren-a "$($SBX ps --format '{{.Names}}')"
check "it kept running: exec by the new name" test "$($SBX exec ren-c echo hi)" = hi
expect_rc "the old name no longer resolves" 125 $SBX exec ren-a true
expect_rc "the old name is free: a new sandbox takes it" 0 $SBX run --rm --name ren-a $BB -- true
out=$($SBX rename ren-c ren-b 2>&1); rc=$?
check "rename to a name in use: 125 ($out)" test "$rc" = 125
check "... naming the holder" grep -q "already used" <<<"$out"
check "... and it keeps its name" test "$($SBX exec ren-c echo still)" = still
out=$($SBX rename ren-c 'bad/name' 2>&1); rc=$?
check "an invalid name: 125 ($out)" test "$rc" = 125
expect_rc "its current name: 125" 125 $SBX rename ren-c ren-c
expect_rc "an unknown sandbox: 125" 125 $SBX rename nosuch-sandbox x1
check "no stray name links" test "$(ls "$SBX_RUN_ROOT/.names" | sort | tr '\n' ' ')" = "ren-b ren-c "
expect_rc "rename by id prefix" 0 $SBX rename "${id:0:12}" ren-d
$SBX rm -f ren-d ren-b >/dev/null
rmdir "$SBX_RUN_ROOT/.names" 2>/dev/null
finish
