#!/usr/bin/env bash
# Registries, loopback only: Debian's docker-registry (2.8) run as a plain
# process on 127.0.0.1 with a temp storage dir, in two configurations (plain
# HTTP; TLS with a CA made here + htpasswd Basic auth), filled with skopeo;
# and tests/integration/fake_registry.py for the faults a real registry does
# not make (corrupt blob, cut connections, huge or schema 1 manifests).
# Checks: sbx pull, pull on run, push + pull back (same digest, skopeo agrees),
# concurrent double pull, login/logout (good and wrong password, exit 125, auth
# file 0600, no password printed), missing image, short names never pulled
# without asking, corrupt blob refused, interrupted pull resumed with Range,
# nothing unverified in the store. Cleans up: registries stopped, temp dirs removed.
set -euo pipefail

SRC=${SBX_TEST_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
SBX=${SBX:-$SRC/build/sbx}
export SBX_IMAGES=${SBX_IMAGES:-$SRC/tests/images/out}
IMAGES=$SBX_IMAGES
[ -d "$IMAGES/busybox-oci" ] || "$SRC/tests/images/build.sh" busybox
for t in docker-registry skopeo htpasswd openssl curl; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is missing (apt-get install docker-registry skopeo apache2-utils openssl curl)"; exit 0; }
done

T=$(mktemp -d /tmp/sbx-registry.XXXXXX)
PIDS=()
cleanup() {
  local rc=$?
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  findmnt -rn -o TARGET | grep -F "$T/" | sort -r | while read -r m; do umount "$m" || umount -l "$m"; done
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export REGISTRY_AUTH_FILE=$T/auth.json  # never the user's own auth file

# start_registry NAME PORT [extra yaml lines for http: / auth:]
start_registry() {
  local name=$1 port=$2
  mkdir -p "$T/$name"
  cat >"$T/$name/config.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $T/$name/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$3
YML
  # (env -u: the registry reads REGISTRY_* variables as config overrides)
  env -u REGISTRY_AUTH_FILE docker-registry serve "$T/$name/config.yml" >"$T/$name/log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    curl -sk -o /dev/null "http://127.0.0.1:$port/v2/" && return 0
    curl -sk -o /dev/null "https://127.0.0.1:$port/v2/" && return 0
    sleep 0.1
  done
  cat "$T/$name/log"; fail "registry $name did not start"
}

# --- plain HTTP registry, filled with skopeo.
P=$(free_port)
start_registry plain "$P" ""
R=127.0.0.1:$P
skopeo copy -q --dest-tls-verify=false "oci:$IMAGES/busybox-oci:latest" "docker://$R/busybox:latest" >/dev/null
skopeo copy -q --dest-tls-verify=false "oci:$IMAGES/busybox-oci:latest" "docker://$R/other/bb:1.0" >/dev/null
man=$(json "d['manifests'][0]['digest'].split(':')[1]" <"$IMAGES/busybox-oci/index.json")
ID=$(json "d['config']['digest'].split(':')[1]" <"$IMAGES/busybox-oci/blobs/sha256/$man")
LARGEST=$(json "max(d['layers'], key=lambda l: l['size'])['digest'].split(':')[1]" <"$IMAGES/busybox-oci/blobs/sha256/$man")

S() { "$SBX" --root "$T/root" --run-root "$T/run" "$@"; }
id=$(S pull "$R/busybox" 2>"$T/err") || { cat "$T/err"; fail "sbx pull $R/busybox"; }
[ "$id" = "$ID" ] || fail "sbx pull printed '$id', not the config digest $ID"
grep -q "Copying blob" "$T/err" || fail "no progress lines on stderr (not a terminal)"
S images | grep -Eq "^$R/busybox +latest +${ID:0:12} " || { S images; fail "pulled image not listed as $R/busybox:latest"; }
[ -z "$(ls "$T/root/tmp" | grep -v '\.lock$' || true)" ] || fail "pull left temp files: $(ls "$T/root/tmp")"
pass "sbx pull from a plain-HTTP loopback registry (id = config digest)"

# Pulled again: every blob skipped, same id.
S pull "$R/busybox" 2>"$T/err" >/dev/null
[ "$(grep -c 'skipped: already exists' "$T/err")" -ge 4 ] || { cat "$T/err"; fail "second pull fetched blobs again"; }
pass "second pull fetches nothing"

# --json events and --quiet.
S pull --json "$R/other/bb:1.0" 2>"$T/err" >/dev/null
python3 -c "import json,sys; ev=[json.loads(l)['event'] for l in open('$T/err')]; assert 'resolved' in ev and 'done' in ev, ev"
[ -z "$(S pull -q "$R/other/bb:1.0" 2>&1 >/dev/null)" ] || fail "--quiet printed progress"
pass "--json events and --quiet"

# Pull on run: an image not in the store whose name has a registry.
out=$("$SBX" --root "$T/root2" --run-root "$T/run" run --rm "$R/busybox" -- echo pulled-and-ran 2>/dev/null)
[ "$out" = pulled-and-ran ] || fail "sbx run $R/busybox printed '$out'"
"$SBX" --root "$T/root2" --run-root "$T/run" run --rm --pull=never "$R/busybox" -- true || fail "--pull=never with the image present"
set +e
"$SBX" --root "$T/root3" --run-root "$T/run" run --rm --pull=never "$R/busybox" -- true 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "not found" "$T/err" || fail "--pull=never without the image: rc $rc, $(cat "$T/err")"
[ ! -e "$T/root3/blobs/sha256/$ID" ] || fail "--pull=never pulled"
pass "sbx run pulls a missing image (and --pull=never does not)"
err=$("$SBX" --root "$T/root2" --run-root "$T/run" run --rm --pull=always "$R/busybox" -- true 2>&1 >/dev/null)
grep -q "skipped: already exists" <<<"$err" || fail "--pull=always did not ask the registry: $err"
pass "--pull=always checks the registry (blobs already there skipped)"

# A short name that is not in the store is pulled as docker and podman do:
# from the registries.conf's search registries ($CONTAINERS_REGISTRIES_CONF,
# as podman), else docker.io. Here docker.io is blocked (no packet leaves the
# machine) and the search list names the test registry.
cat >"$T/blocked-hub.conf" <<CONF
unqualified-search-registries = ["docker.io"]
[[registry]]
location = "docker.io"
blocked = true
CONF
set +e
CONTAINERS_REGISTRIES_CONF=$T/blocked-hub.conf "$SBX" --root "$T/root" --run-root "$T/run" run --rm sbx-no-such-image -- true 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "is not in the store, and pulling it failed: registry docker.io is blocked" "$T/err" || fail "short missing name: rc $rc, $(cat "$T/err")"
[ -z "$(ls "$T/root/tmp" 2>/dev/null)" ] || fail "a refused short-name pull left files in the store's tmp"
pass "a missing short name goes to the search registries (docker.io blocked here: exit 125, clear error)"
cat >"$T/search-local.conf" <<CONF
unqualified-search-registries = ["$R"]
CONF
out=$(CONTAINERS_REGISTRIES_CONF=$T/search-local.conf "$SBX" --root "$T/rootshort" --run-root "$T/run" run --rm busybox -- echo short-pulled 2>/dev/null)
[ "$out" = short-pulled ] || fail "sbx run busybox (short name, search registry $R) printed '$out'"
pass "sbx run SHORTNAME pulls a missing image from the search registries (\$CONTAINERS_REGISTRIES_CONF)"

# A registry that is not there (a free loopback port).
set +e
S pull "127.0.0.1:$(free_port)/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "cannot reach registry" "$T/err" || fail "unreachable registry: rc $rc, $(cat "$T/err")"
pass "unreachable registry: exit 125, clear error"

# Missing image / tag on the registry.
set +e
S pull "$R/busybox:nope" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "not found on the registry" "$T/err" || fail "missing tag: rc $rc, $(cat "$T/err")"
pass "missing tag: exit 125, '$(head -c 120 "$T/err")'"

# Push: the image back under a new name; skopeo sees the same manifest digest,
# and a pull of it into an empty store gives the same image.
dig=$(S push -q busybox-no-such 2>/dev/null) && fail "push of an unknown image succeeded"
dig=$(S push -q "$R/busybox" "$R/pushed/busybox:v1") || fail "sbx push"
sk=$(skopeo inspect --tls-verify=false "docker://$R/pushed/busybox:v1" | json "d['Digest']")
[ "$dig" = "$sk" ] || fail "push printed $dig, skopeo sees $sk"
[ "$dig" = "sha256:$man" ] || fail "pushed manifest $dig differs from the stored sha256:$man"
id=$("$SBX" --root "$T/root4" pull -q "$R/pushed/busybox:v1")
[ "$id" = "$ID" ] || fail "pull of the pushed image gave $id"
pass "sbx push, skopeo inspect agrees ($sk), pulled back with the same id"
n=$(S push "$R/busybox" "$R/mounted/busybox:v1" 2>&1 >/dev/null | grep -c "mounted from another repository" || true)
[ "$n" = 4 ] || fail "push to another repository of the same registry mounted $n of 4 blobs"
pass "push mounts the blobs from the repository the image came from"

# Chunked upload: with 256 KiB chunks the 1 MiB layer goes up in PATCHes
# (Content-Range), and the registry has the same image (skopeo, pull back).
P2=$(free_port)
REGISTRY_LOG_LEVEL=info start_registry chunked "$P2" ""
dig=$(SBX_PUSH_CHUNK_BYTES=262144 S push -q "$R/busybox" "127.0.0.1:$P2/chunked/busybox:v1") || fail "chunked push"
[ "$dig" = "sha256:$man" ] || fail "chunked push printed $dig"
n=$(grep -c 'http.request.method=PATCH' "$T/chunked/log" || true)
[ "$n" -ge 4 ] || fail "chunked push made $n PATCH requests (want >= 4): $(grep -c . "$T/chunked/log") log lines"
sk=$(skopeo inspect --tls-verify=false "docker://127.0.0.1:$P2/chunked/busybox:v1" | json "d['Digest']")
[ "$sk" = "$dig" ] || fail "after a chunked push skopeo sees $sk"
id=$("$SBX" --root "$T/root5" pull -q "127.0.0.1:$P2/chunked/busybox:v1")
[ "$id" = "$ID" ] || fail "pull of the chunk-pushed image gave $id"
pass "chunked push ($n PATCHes of 256 KiB), skopeo agrees, pulled back with the same id"

# Push of a snapshot (an image with a layer sbx made: an overlay upper dir committed).
mkdir -p "$T/upper"
echo from-snapshot >"$T/upper/snapfile"
S snapshot --upper "$T/upper" --image "$R/busybox" --name snapimg:v1 >/dev/null || fail "sbx snapshot --upper"
S push -q snapimg:v1 "$R/snap/img:v1" >/dev/null || fail "push of a snapshot image"
out=$("$SBX" --root "$T/root5" --run-root "$T/run" run --rm "$R/snap/img:v1" -- cat /snapfile 2>/dev/null)
[ "$out" = from-snapshot ] || fail "snapshot pushed and pulled back reads '$out'"
pass "push of a snapshot, pulled back and run"

# registries.conf: a short name found through unqualified-search-registries,
# a mirror used for a registry that is down, a blocked registry refused.
DEAD=127.0.0.1:$(free_port)  # nothing listens there
cat >"$T/registries.conf" <<CONF
unqualified-search-registries = ["$R"]
[[registry]]
location = "$DEAD"
[[registry.mirror]]
location = "$R"
CONF
id=$("$SBX" --root "$T/rc1" pull -q --registries-conf "$T/registries.conf" busybox) || fail "short name via search registries"
[ "$id" = "$ID" ] || fail "search-registries pull gave $id"
"$SBX" --root "$T/rc1" images | grep -Eq "^$R/busybox +latest " || fail "short-name pull not named $R/busybox"
id=$("$SBX" --root "$T/rc2" pull -q --registries-conf "$T/registries.conf" "$DEAD/busybox") || fail "pull through a mirror"
"$SBX" --root "$T/rc2" images | grep -Eq "^$DEAD/busybox +latest " || fail "mirrored pull not named $DEAD/busybox"
printf '[[registry]]\nlocation = "%s"\nblocked = true\n' "$R" >"$T/blocked.conf"
set +e
"$SBX" --root "$T/rc3" pull -q --registries-conf "$T/blocked.conf" "$R/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "blocked" "$T/err" || fail "blocked registry: rc $rc, $(cat "$T/err")"
pass "registries.conf: search registries, mirror, blocked"

# An OCI index with two platforms (the same manifest listed for linux/amd64 and
# linux/arm64; PUT with curl): the host's is picked, an absent one is a clear error.
msize=$(stat -c %s "$IMAGES/busybox-oci/blobs/sha256/$man")
cat >"$T/index.json" <<JSON
{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
 {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:$man","size":$msize,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}},
 {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:$man","size":$msize,"platform":{"os":"linux","architecture":"amd64"}}]}
JSON
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Content-Type: application/vnd.oci.image.index.v1+json" \
  --data-binary @"$T/index.json" "http://$R/v2/busybox/manifests/multi")
[ "$code" = 201 ] || fail "PUT of the test index: HTTP $code"
if [ "$(uname -m)" = x86_64 ]; then
  id=$("$SBX" --root "$T/root9" pull -q "$R/busybox:multi") || fail "pull of a two-platform index"
  [ "$id" = "$ID" ] || fail "index pull gave $id"
fi
id=$("$SBX" --root "$T/root9" pull -q --platform linux/arm64 "$R/busybox:multi") || fail "pull --platform linux/arm64"
set +e
"$SBX" --root "$T/root9" pull -q --platform linux/s390x "$R/busybox:multi" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "no image for linux/s390x (it has: linux/arm64/v8, linux/amd64)" "$T/err" ||
  fail "absent platform: rc $rc, $(cat "$T/err")"
pass "image index: the host's platform picked, --platform honoured, an absent platform named"

# The python image: pulled on run, and python runs.
if [ -d "$IMAGES/python-oci" ]; then
  skopeo copy -q --dest-tls-verify=false "oci:$IMAGES/python-oci:latest" "docker://$R/python:3" >/dev/null
  out=$("$SBX" --root "$T/root10" --run-root "$T/run" run --rm "$R/python:3" -- python3 -c 'print(6*7)' 2>/dev/null)
  [ "$out" = 42 ] || fail "python pulled on run printed '$out'"
  pass "python image pulled on run, python3 runs"
else
  echo "skip: $IMAGES/python-oci not built"
fi

# Two pulls of the same image at once into one empty store: both succeed, one image.
"$SBX" --root "$T/root6" pull -q "$R/busybox" >"$T/a" 2>&1 &
a=$!
"$SBX" --root "$T/root6" pull -q "$R/busybox" >"$T/b" 2>&1 &
b=$!
wait $a || fail "concurrent pull 1: $(cat "$T/a")"
wait $b || fail "concurrent pull 2: $(cat "$T/b")"
[ "$(cat "$T/a")" = "$ID" ] && [ "$(cat "$T/b")" = "$ID" ] || fail "concurrent pulls: $(cat "$T/a") $(cat "$T/b")"
[ "$("$SBX" --root "$T/root6" images -q | wc -l)" = 1 ] || fail "concurrent pulls made more than one image"
pass "two concurrent pulls of one image"

# --- TLS (a CA made here) + htpasswd Basic auth.
mkdir -p "$T/ca" "$T/certs.d"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=sbx test CA" -keyout "$T/ca/ca.key" -out "$T/ca/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$T/ca/srv.key" -out "$T/ca/srv.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$T/ca/ext"
openssl x509 -req -in "$T/ca/srv.csr" -CA "$T/ca/ca.crt" -CAkey "$T/ca/ca.key" -CAcreateserial -days 1 \
  -extfile "$T/ca/ext" -out "$T/ca/srv.crt" 2>/dev/null
htpasswd -Bbc "$T/htpasswd" tester s3cret-pw >/dev/null 2>&1
P2=$(free_port)
R2=127.0.0.1:$P2
start_registry tls "$P2" "  tls:
    certificate: $T/ca/srv.crt
    key: $T/ca/srv.key
auth:
  htpasswd:
    realm: sbx-test
    path: $T/htpasswd"
mkdir -p "$T/certs.d/$R2"
cp "$T/ca/ca.crt" "$T/certs.d/$R2/ca.crt"
skopeo copy -q --dest-cert-dir="$T/certs.d/$R2" --dest-creds tester:s3cret-pw "oci:$IMAGES/busybox-oci:latest" \
  "docker://$R2/busybox:latest" >/dev/null
C=(--cert-dir "$T/certs.d")
set +e
S pull "${C[@]}" "$R2/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "sbx login" "$T/err" || fail "pull without login: rc $rc, $(cat "$T/err")"
set +e
echo wrong-pw | S login "${C[@]}" -u tester --password-stdin "$R2" >"$T/out" 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -qi "wrong user name or password" "$T/err" || fail "bad password: rc $rc, $(cat "$T/err")"
[ ! -e "$T/auth.json" ] || ! grep -q "$R2" "$T/auth.json" || fail "a failed login stored credentials"
pass "login with a wrong password: exit 125, '$(head -c 100 "$T/err")'"
echo s3cret-pw | S login "${C[@]}" -u tester --password-stdin "$R2" >"$T/out" 2>"$T/err" || fail "login: $(cat "$T/err")"
grep -q "Login Succeeded" "$T/out" || fail "login printed $(cat "$T/out")"
! grep -q s3cret-pw "$T/out" "$T/err" || fail "login printed the password"
[ "$(stat -c %a "$T/auth.json")" = 600 ] || fail "auth file mode $(stat -c %a "$T/auth.json")"
python3 -c "import json; d=json.load(open('$T/auth.json')); assert '$R2' in d['auths']"
pass "login stores credentials in the auth file (mode 0600, password never printed)"
id=$("$SBX" --root "$T/root7" pull -q "${C[@]}" "$R2/busybox") || fail "pull over TLS with credentials"
[ "$id" = "$ID" ] || fail "TLS pull gave $id"
set +e
"$SBX" --root "$T/root8" pull -q "$R2/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -qi "certificate\|SSL\|TLS" "$T/err" || fail "pull without the CA: rc $rc, $(cat "$T/err")"
id=$("$SBX" --root "$T/root8" pull -q --tls-verify=false "$R2/busybox") || fail "pull with --tls-verify=false"
pass "TLS registry: pull with the test CA (certs.d), refused without it, --tls-verify=false works"
S push -q "${C[@]}" "$R/busybox" "$R2/pushed:v2" >/dev/null || fail "push with Basic auth over TLS"
S logout "$R2" | grep -q "Removed login credentials" || fail "logout"
! grep -q "$R2" "$T/auth.json" || fail "logout left the entry"
set +e
S logout "$R2" >/dev/null 2>&1; rc=$?
set -e
[ $rc = 125 ] || fail "logout when not logged in: rc $rc"
pass "push with Basic auth; logout removes the entry"

# --- Bearer tokens: a token server of our own (tests/integration/token_server.py)
# whose JWTs the registry checks against a test certificate (auth.token).
mkdir -p "$T/tok"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=sbx token signer" \
  -keyout "$T/tok/key.pem" -out "$T/tok/cert.pem" 2>/dev/null
python3 "$SRC/tests/integration/token_server.py" "$T/tok/key.pem" "$T/tok/cert.pem" sbx-test-issuer \
  tester s3cret-pw "$T/tok/port" "$T/tok/log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/tok/port" ] && break; sleep 0.05; done
P3=$(free_port)
R3=127.0.0.1:$P3
start_registry bearer "$P3" "auth:
  token:
    realm: http://127.0.0.1:$(cat "$T/tok/port")/token
    service: sbx-test-registry
    issuer: sbx-test-issuer
    rootcertbundle: $T/tok/cert.pem"
# Its storage starts as a copy of the plain registry's (busybox is in it).
mkdir -p "$T/bearer/storage"
cp -a "$T/plain/storage/." "$T/bearer/storage/"
: >"$T/tok/log"
id=$("$SBX" --root "$T/rb1" pull -q "$R3/busybox" 2>"$T/err") || fail "anonymous Bearer pull: $(cat "$T/err")"
[ "$id" = "$ID" ] || fail "Bearer pull gave $id"
[ "$(grep -c '^anonymous repository:busybox:pull' "$T/tok/log")" = 1 ] ||
  fail "want one anonymous token for the whole pull (reused): $(cat "$T/tok/log")"
pass "anonymous Bearer-token pull, one token reused for every request"
set +e
S push -q "$R/busybox" "$R3/anon/busybox:v1" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "sbx login" "$T/err" || fail "anonymous push: rc $rc, $(cat "$T/err")"
set +e
echo nope | S login -u tester --password-stdin "$R3" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -qi "wrong user name or password" "$T/err" || fail "Bearer bad password: rc $rc, $(cat "$T/err")"
echo s3cret-pw | S login -u tester --password-stdin "$R3" >/dev/null || fail "Bearer login"
: >"$T/tok/log"
dig=$(S push -q "$R/busybox" "$R3/team/busybox:v1") || fail "push with a Bearer token"
grep -q "^tester repository:team/busybox:pull,push" "$T/tok/log" || fail "push token request: $(cat "$T/tok/log")"
id=$("$SBX" --root "$T/rb2" pull -q "$R3/team/busybox:v1") || fail "pull back from the Bearer registry"
[ "$id" = "$ID" ] || fail "Bearer pull back gave $id"
S logout "$R3" >/dev/null
pass "Bearer: wrong password refused (125), login, push with a pull,push token, pull back"

# --- faults: tests/integration/fake_registry.py.
start_fake() {  # MODE
  rm -f "$T/fake.port"
  python3 "$SRC/tests/integration/fake_registry.py" "$IMAGES/busybox-oci" "$1" "$T/fake.port" "$T/fake.log" &
  FAKE=$!
  PIDS+=($FAKE)
  for _ in $(seq 100); do [ -s "$T/fake.port" ] && break; sleep 0.05; done
  F=127.0.0.1:$(cat "$T/fake.port")
}
stop_fake() { kill "$FAKE"; wait "$FAKE" 2>/dev/null || true; }
no_unverified() {  # ROOT: nothing in blobs/ that is not what its name says, no layer of LARGEST
  for b in "$1"/blobs/sha256/*; do
    [ -e "$b" ] || continue
    [ "$(sha256sum <"$b" | cut -d' ' -f1)" = "$(basename "$b")" ] || fail "unverified blob $b in the store"
  done
}

start_fake corrupt
set +e
"$SBX" --root "$T/rf1" pull "$F/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "refusing it" "$T/err" || fail "corrupt blob: rc $rc, $(cat "$T/err")"
[ ! -e "$T/rf1/blobs/sha256/$LARGEST" ] || fail "corrupt blob is in the store"
[ ! -e "$T/rf1/tmp/blob-$LARGEST.partial" ] || fail "the corrupt blob's partial file was kept"
[ "$("$SBX" --root "$T/rf1" images -q | wc -l)" = 0 ] || fail "an image was indexed"
no_unverified "$T/rf1"
stop_fake
pass "a blob with one corrupt byte is refused (exit 125), nothing of it stored"

for mode in huge-manifest schema1; do
  start_fake $mode
  set +e
  "$SBX" --root "$T/rf2" pull "$F/busybox" >/dev/null 2>"$T/err"; rc=$?
  set -e
  [ $rc = 125 ] || fail "$mode: rc $rc"
  case $mode in
    huge-manifest) grep -q "larger than 4 MiB" "$T/err" || fail "$mode: $(cat "$T/err")" ;;
    schema1) grep -q "schema 1" "$T/err" || fail "$mode: $(cat "$T/err")" ;;
  esac
  stop_fake
  pass "$mode refused: '$(head -c 110 "$T/err")'"
done

# A connection cut mid-blob once: the pull retries with Range and succeeds.
: >"$T/fake.log"
start_fake truncate-once
id=$("$SBX" --root "$T/rf3" pull -q "$F/busybox" 2>"$T/err") || fail "truncate-once: $(cat "$T/err")"
[ "$id" = "$ID" ] || fail "truncate-once gave $id"
grep -E "GET /v2/busybox/blobs/sha256:$LARGEST bytes=[1-9][0-9]*-" "$T/fake.log" >/dev/null ||
  fail "no Range request after the cut: $(cat "$T/fake.log")"
no_unverified "$T/rf3"
stop_fake
pass "a cut connection is resumed with Range within the pull"

# Cut every time: the pull fails, the partial blob stays out of the store; the
# next pull (registry healthy again) resumes from it.
: >"$T/fake.log"
start_fake truncate-always
set +e
"$SBX" --root "$T/rf4" pull "$F/busybox" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 125 ] && grep -q "resume" "$T/err" || fail "truncate-always: rc $rc, $(cat "$T/err")"
[ ! -e "$T/rf4/blobs/sha256/$LARGEST" ] || fail "partial blob in the store"
[ -s "$T/rf4/tmp/blob-$LARGEST.partial" ] || fail "no partial file kept for resuming: $(ls "$T/rf4/tmp")"
have=$(stat -c %s "$T/rf4/tmp/blob-$LARGEST.partial")
[ "$("$SBX" --root "$T/rf4" images -q | wc -l)" = 0 ] || fail "an image was indexed"
stop_fake
: >"$T/fake.log"
start_fake ok
id=$("$SBX" --root "$T/rf4" pull -q "$F/busybox" 2>"$T/err") || fail "resumed pull: $(cat "$T/err")"
[ "$id" = "$ID" ] || fail "resumed pull gave $id"
grep -q "GET /v2/busybox/blobs/sha256:$LARGEST bytes=$have-" "$T/fake.log" ||
  fail "the next pull did not resume at byte $have: $(cat "$T/fake.log")"
[ -z "$(ls "$T/rf4/tmp" | grep "\.partial$" || true)" ] || fail "partial file left after the resumed pull"
no_unverified "$T/rf4"
out=$("$SBX" --root "$T/rf4" --run-root "$T/run" run --rm "$F/busybox" -- cat /etc/sbx-test/kept 2>/dev/null)
[ "$out" = "this file stays" ] || fail "resumed image runs wrong: '$out'"
stop_fake
pass "an interrupted pull leaves no blob or image; the next pull resumes at byte $have"

# Ctrl-C (SIGINT) in the middle of a blob: nothing unverified in the store, no
# image; the next pull resumes from the partial file.
: >"$T/fake.log"
start_fake slow
# (env --default-signal: bash starts background jobs with SIGINT ignored)
env --default-signal=INT "$SBX" --root "$T/rf5" pull -q "$F/busybox" >/dev/null 2>&1 &
pull=$!
for _ in $(seq 100); do [ -s "$T/rf5/tmp/blob-$LARGEST.partial" ] && break; sleep 0.05; done
[ -s "$T/rf5/tmp/blob-$LARGEST.partial" ] || fail "slow pull wrote nothing"
kill -INT $pull
set +e
wait $pull; rc=$?
set -e
[ $rc != 0 ] || fail "interrupted pull exited 0"
[ ! -e "$T/rf5/blobs/sha256/$LARGEST" ] || fail "interrupted blob in the store"
[ "$("$SBX" --root "$T/rf5" images -q | wc -l)" = 0 ] || fail "an image was indexed"
no_unverified "$T/rf5"
stop_fake
: >"$T/fake.log"
start_fake ok
id=$("$SBX" --root "$T/rf5" pull -q "$F/busybox") || fail "pull after Ctrl-C"
[ "$id" = "$ID" ] || fail "pull after Ctrl-C gave $id"
grep -Eq "GET /v2/busybox/blobs/sha256:$LARGEST bytes=[1-9][0-9]*-" "$T/fake.log" || fail "no resume after Ctrl-C: $(cat "$T/fake.log")"
stop_fake
pass "Ctrl-C mid-pull: nothing unverified stored; the next pull resumes"

# Two pulls at once of a slow blob: it is fetched once (the per-blob lock);
# the second pull waits and then finds it in the store.
: >"$T/fake.log"
start_fake slow
"$SBX" --root "$T/rf6" pull -q "$F/busybox" >"$T/a" 2>&1 &
a=$!
"$SBX" --root "$T/rf6" pull -q "$F/busybox" >"$T/b" 2>&1 &
b=$!
wait $a || fail "concurrent slow pull 1: $(cat "$T/a")"
wait $b || fail "concurrent slow pull 2: $(cat "$T/b")"
n=$(grep -c "^GET /v2/busybox/blobs/sha256:$LARGEST" "$T/fake.log" || true)
[ "$n" = 1 ] || fail "the blob was fetched $n times by two concurrent pulls"
stop_fake
pass "two concurrent pulls fetch each blob once"

# Layers are unpacked while the others still download: with the top layer's
# blob held back 2 s, layer 1 is unpacked before that blob is done.
: >"$T/fake.log"
start_fake slow-top
TOP=$(json "d['layers'][-1]['digest']" <"$IMAGES/busybox-oci/blobs/sha256/$man")
id=$("$SBX" --root "$T/rf7" pull --json "$F/busybox" 2>"$T/events") || fail "slow-top pull: $(cat "$T/events")"
[ "$id" = "$ID" ] || fail "slow-top pull gave '$id'"
python3 - "$T/events" "$TOP" <<'PY' || fail "layer 1 was not unpacked before the top blob arrived: $(cat "$T/events")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
unpack1 = min(i for i, e in enumerate(ev) if e["event"] == "unpacking" and e.get("layer") == 1)
top_done = min(i for i, e in enumerate(ev) if e["event"] == "blob-done" and e["digest"] == sys.argv[2])
sys.exit(0 if unpack1 < top_done else 1)
PY
stop_fake
pass "layers unpack while later blobs still download"

echo "test_registry: all passed"
