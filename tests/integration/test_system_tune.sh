#!/usr/bin/env bash
# sbx system tune --favordynmods on|off and its report in sbx info:
# the switch is idempotent, shows in /proc/mounts, keeps the mount's other
# options, and the test puts back exactly the state it found (trap).
set -uo pipefail
: "${SBX:?set SBX to the sbx binary}"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (remount)"; exit 77; fi
mnt=$(awk '$3 == "cgroup2" && ($2 == "/sys/fs/cgroup" || $2 == "/sys/fs/cgroup/unified") {m = $2} END {print m}' /proc/mounts)
[ -n "$mnt" ] || { echo "SKIP: no cgroup2 mount"; exit 77; }
opts() { awk -v m="$mnt" '$3 == "cgroup2" && $2 == m {o = $4} END {print o}' /proc/mounts; }
before=$(opts)
case ",$before," in *,favordynmods,*) was=on ;; *) was=off ;; esac
restore() { "$SBX" system tune --favordynmods "$was" >/dev/null 2>&1; }
trap restore EXIT
fails=0 passes=0
check() { local d=$1; shift; if "$@"; then passes=$((passes + 1)); echo "ok   $d"; else fails=$((fails + 1)); echo "FAIL $d"; fi; }
echo "found: $mnt $before (favordynmods $was)"

check "sbx info reports the state ($was)" grep -q "^favordynmods: $was (cgroup2 at $mnt" <<<"$("$SBX" info)"
check "system tune --json: favordynmods_before is null when nothing changed" grep -q '"favordynmods_before": null' <<<"$("$SBX" system tune --json)"
check "sbx info --json too" grep -q "\"favordynmods\": $([ $was = on ] && echo true || echo false)" <<<"$("$SBX" info --json)"
if ! "$SBX" system tune --favordynmods on >"$(mktemp)" 2>/tmp/tune.err.$$; then
  if grep -q "favordynmods" /tmp/tune.err.$$; then echo "SKIP: this kernel has no favordynmods: $(cat /tmp/tune.err.$$)"; rm -f /tmp/tune.err.$$; exit 77; fi
fi
rm -f /tmp/tune.err.$$
check "on: /proc/mounts has favordynmods" grep -q "favordynmods" <<<"$(opts)"
check "on again: idempotent, says unchanged" grep -q "favordynmods: on (unchanged)" <<<"$("$SBX" system tune --favordynmods on)"
check "sbx info says on" grep -q "^favordynmods: on" <<<"$("$SBX" info)"
"$SBX" system tune --favordynmods off >/dev/null
check "off: /proc/mounts has no favordynmods" bash -c "! grep -q favordynmods <<<'$(opts)'"
check "off keeps the other options ($(opts) vs $before)" test "$(opts | tr , '\n' | grep -v favordynmods | sort)" = "$(tr , '\n' <<<"$before" | grep -v favordynmods | sort)"
check "a bad value is refused" bash -c "! '$SBX' system tune --favordynmods maybe 2>/dev/null"
restore
trap - EXIT
check "the state found is restored exactly ($(opts))" test "$(opts)" = "$before"
echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
