# Sourced by .ci/runsc-backports.sh and .ci/criu-build.sh: find_mirror prints
# the Debian mirror that serves this machine's own "bookworm" suite, so that
# the suites they add (bookworm-backports, trixie's sources) come from the
# same place and no host is hard-coded.
# deb822 files (URIs:/Suites: stanzas) first, then one-line "deb URI bookworm ..." entries.
find_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    awk 'BEGIN{RS=""; FS="\n"}
         { uri=""; ok=0
           for (i=1;i<=NF;i++) {
             if ($i ~ /^URIs:/)   { split($i,a,/[ \t]+/); uri=a[2] }
             if ($i ~ /^Suites:/) { n=split($i,s,/[ \t]+/); for (j=2;j<=n;j++) if (s[j]=="bookworm") ok=1 }
           }
           if (ok && uri!="") { print uri; exit } }' "$f"
  done | head -n1
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1=="deb" { u=""; for (i=2;i<=NF;i++) { if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; continue }
                     if (u=="") { u=$i; continue } if ($i=="bookworm") { print u; exit } break } }' | head -n1
}
