#!/usr/bin/env bash
# The house rule "every command has --help, a man page and bash/zsh/fish
# completions that agree with it", checked against the built binary: parse
# `sbx --help` and `sbx CMD --help` (CLI11's layout: a "Subcommands:" list and
# an "Options:" list whose first column is "-s,--long ARG"), then for every
# subcommand (snapshots' own ones too) and every long option check that
#   bash: the completion function, run for "sbx CMD --", offers it;
#   fish: `complete -C "sbx CMD --"` offers it (when fish is installed);
#   zsh:  the command's function _sbx_CMD in completions/sbx.zsh names it;
#   man:  man/sbx-CMD.1 exists or man/sbx.1 has a \fBCMD\fR entry.
# Plus `zsh -n` and `fish -n` syntax checks. Needs no root and no images.
set -uo pipefail

SRC=${SBX_TEST_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
SBX=${SBX:-$SRC/build/sbx}
BASH_C=$SRC/completions/sbx.bash
ZSH_C=$SRC/completions/sbx.zsh
FISH_C=$SRC/completions/sbx.fish
MAN=$SRC/man

passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

# Subcommand names in a help text (aliases too: "ps, list").
subcommands() {
  awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {sub(/^  /, ""); split($0, a, /  +/); gsub(/,/, "", a[1]); print a[1]} s && /^$/ {s = 0}' | tr ' ' '\n' | grep -v '^$'
}
# Long options in a help text ("--help" left out: every command has it; a
# flag's default value, "--pull{always}", is not part of its name).
long_options() {
  awk '/^Options:/ {s = 1; next} /^[A-Z][a-z]*:/ {s = 0} s && /^  -/ {print $1}' | tr ',' '\n' | sed 's/{.*//' | grep '^--' | grep -vx -- '--help'
}

help_top=$("$SBX" --help) || { echo "FAIL: sbx --help exited non-zero"; echo "0 passed, 1 failed"; exit 1; }
cmds=$(subcommands <<<"$help_top")
[ "$(wc -w <<<"$cmds")" -ge 20 ] || { echo "FAIL: parsed only '$cmds' from sbx --help"; echo "0 passed, 1 failed"; exit 1; }

# --- syntax of the three files.
check "bash -n sbx.bash" 'bash -n "$BASH_C"'
if command -v zsh >/dev/null; then check "zsh -n sbx.zsh" 'zsh -n "$ZSH_C"'
else echo "skip: zsh not installed (apt-get install zsh): no zsh -n check"; fi
have_fish=0
if command -v fish >/dev/null; then have_fish=1; check "fish -n sbx.fish" 'fish -n "$FISH_C"'
else echo "skip: fish not installed (apt-get install fish): fish checks skipped"; fi

# Bash: what the completion function offers for the words "sbx $*" (last one the word being completed).
bash_complete() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; _sbx; printf "%s\n" "${COMPREPLY[@]}"' _ "$BASH_C" sbx "$@" 2>/dev/null
}
# Fish: what `complete -C` offers for the command line "sbx $*" (first column).
fish_complete() {
  fish -N -c "source '$FISH_C'; complete -C 'sbx $*'" 2>/dev/null | cut -f1
}
# Zsh: the body of function NAME in sbx.zsh.
zsh_body() {
  awk -v f="$1" '$0 ~ "^" f "\\(\\) *\\{" {s = 1} s {print} s && /^\}/ {exit}' "$ZSH_C"
}

# Top level: every subcommand and global option offered.
top_bash=$(bash_complete "")
[ $have_fish = 1 ] && top_fish=$(fish_complete "")
top_zsh=$(zsh_body _sbx)
# The tag lines of man/sbx.1 (the line after each .TP): one command or more each.
man_tags=$(awk 'p {print; p = 0} /^\.TP/ {p = 1}' "$MAN/sbx.1")
for c in $cmds; do
  check "bash: subcommand $c not offered" 'grep -qx -- "$c" <<<"$top_bash"'
  [ $have_fish = 1 ] && check "fish: subcommand $c not offered" 'grep -qx -- "$c" <<<"$top_fish"'
  check "zsh: subcommand $c not in _sbx" 'grep -q -- "\b$c:" <<<"$top_zsh"'
  [ "$c" = list ] && continue # the alias of ps: documented there
  tag=$(printf '\\fB%s\\fR' "${c//-/\\-}")
  # sbx.1 says its COMMANDS list has every command: those with a page of
  # their own too (a line there, and the page in SEE ALSO).
  check "man: $c has no .TP entry in man/sbx.1's COMMANDS" 'grep -qF -- "$tag" <<<"$man_tags"'
done
see_also=$(awk '/^\.SH SEE ALSO/ {s = 1; next} /^\.SH/ {s = 0} s' "$MAN/sbx.1" | sed 's/\\-/-/g')
for page in "$MAN"/sbx-*.1; do
  name=$(basename "$page" .1)
  check "man: sbx.1's SEE ALSO lacks $name" 'grep -qF -- "\\fB$name\\fR(1)" <<<"$see_also"'
done
# The man text that documents command WORDS: its own page (man/sbx-CMD.1, for
# a nested command its parent's), else sbx.1; with roff's "\-" as "-".
man_text() {
  local first=${1%% *}
  case $first in
    create) first=run ;;     # "takes sbx run's options": documented in sbx-run(1)
    logout) first=login ;;   # one page for both
  esac
  if [ -f "$MAN/sbx-$first.1" ]; then sed 's/\\-/-/g' "$MAN/sbx-$first.1"; else sed 's/\\-/-/g' "$MAN/sbx.1"; fi
}
for o in $(long_options <<<"$help_top") --help; do
  check "bash: global option $o not offered" 'grep -qx -- "$o" <<<"$(bash_complete --)"'
  [ $have_fish = 1 ] && check "fish: global option $o not offered" 'grep -qx -- "$o" <<<"$(fish_complete --)"'
  check "zsh: global option $o not in _sbx" 'grep -q -- "$o\b" <<<"$top_zsh"'
done

# One subcommand (words: "snapshots rm" for a nested one).
check_command() {
  local words=$1 help zfunc b f z o sub
  help=$("$SBX" $words --help 2>&1) || { bad "sbx $words --help exited non-zero"; return; }
  # An alias (ps, list) shares its command's zsh function.
  local primary
  primary=$(awk -v a="${words##* }" '/^Subcommands:/ {s = 1; next} s && $0 ~ "^  [a-z-]+, " {n = $1; sub(/,$/, "", n); if ($2 == a) print n}' <<<"$help_top")
  zfunc=_sbx_$(tr ' -' '__' <<<"${primary:-$words}")
  z=$(zsh_body "$zfunc")
  check "zsh: no function $zfunc in sbx.zsh" '[ -n "$z" ]'
  b=$(bash_complete $words --)
  [ $have_fish = 1 ] && f=$(fish_complete "$words --")
  local mt
  mt=$(man_text "$words")
  for o in $(long_options <<<"$help"); do
    check "man: 'sbx $words $o' is not in its man page" 'grep -q -- "$o\b" <<<"$mt"'
    check "bash: 'sbx $words' does not offer $o" 'grep -qx -- "$o" <<<"$b"'
    [ $have_fish = 1 ] && check "fish: 'sbx $words' does not offer $o" 'grep -qx -- "$o" <<<"$f"'
    check "zsh: $zfunc does not name $o" 'grep -q -- "$o\b" <<<"$z"'
  done
  local bsub fsub
  bsub=$(bash_complete $words "")
  [ $have_fish = 1 ] && fsub=$(fish_complete "$words ")
  for sub in $(subcommands <<<"$help"); do
    check "bash: 'sbx $words' does not offer subcommand $sub" 'grep -qx -- "$sub" <<<"$bsub"'
    [ $have_fish = 1 ] && check "fish: 'sbx $words' does not offer subcommand $sub" 'grep -qx -- "$sub" <<<"$fsub"'
    check "zsh: $zfunc does not name subcommand $sub" 'grep -q -- "\b$sub:" <<<"$z"'
    check_command "$words $sub"
  done
}
for c in $cmds; do check_command "$c"; done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
