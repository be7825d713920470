#!/usr/bin/env bash
# A single-node Ceph RADOS Gateway (S3-compatible server) for the tests and for
# developers, from Debian's own packages. See /work/shared/notes/s3-test-server.md
# for why Ceph RGW (it checks signatures, supports abort/list of multipart
# uploads, refuses tampered presigned links).
#
#   scripts/s3-test-server.sh start    install if needed, start, print env
#   scripts/s3-test-server.sh stop     stop the daemons of $S3_TEST_DIR
#   scripts/s3-test-server.sh status   exit 0 if it answers with our keys
#                                      (and its OSD is not full)
#
# `start` is idempotent: if an RGW already answers on 127.0.0.1:$S3_TEST_PORT
# with our credentials and bucket (and, for a cluster of $S3_TEST_DIR, its OSD
# is not full), it only prints the environment (well under a second). Otherwise it installs radosgw ceph-mon ceph-osd ceph-mgr with
# apt-get if missing (needs root or sudo), stops the daemons of a previous run
# of the same directory (by their pid files), wipes that directory and builds a
# fresh cluster in it: one mon, one mgr, one OSD (memstore: data lives in RAM
# and is gone on stop), one radosgw, all state, logs, pid files and admin
# sockets under $S3_TEST_DIR. Then it creates the user with the fixed test-only
# keys below and the bucket, warms up multipart uploads (the first one on a
# fresh cluster creates a pool), checks that a wrong secret is refused with
# 403, and prints on stdout (everything else goes to stderr):
#
#   S3_ENDPOINT=http://127.0.0.1:7480
#   S3_REGION=us-east-1
#   S3_BUCKET=media-test
#   S3_ACCESS_KEY_ID=media-test-access
#   S3_SECRET_ACCESS_KEY=media-test-secret-0123456789abcdef
#   S3_FORCE_PATH_STYLE=true
#
# so that this works:
#   eval "$(scripts/s3-test-server.sh start | sed 's/^/export /')"
#
# Environment:
#   S3_TEST_PORT            S3 port on 127.0.0.1 (default 7480)
#   S3_TEST_DIR             state directory (default /tmp/media-s3-test); wiped
#                           on every cold start
#   S3_TEST_MEMSTORE_BYTES  RAM cap of the OSD's memstore (default 4294967296 =
#                           4 GiB). Soft: a write in flight may overshoot it,
#                           but once 95 % is used the OSD is marked full and
#                           every write, even a DELETE, hangs (reads work);
#                           only a new `start` (which sees it) helps. Space of
#                           deleted objects and aborted uploads comes back via
#                           RGW's garbage collector, set here to about 30-60 s.
#   S3_TEST_MON_PORT        monitor port on 127.0.0.1 (default 3300); give each
#                           concurrent cluster on one machine its own
#   S3_TEST_WAIT_SECONDS    bound for the cluster start (default 120)
#   S3_TEST_DEBUG=1         say more about stopping daemons
#
# Not for production: cephx authentication between the daemons is off and the
# keys are public. Everything listens on 127.0.0.1 only.
set -euo pipefail

PORT=${S3_TEST_PORT:-7480}
DIR=${S3_TEST_DIR:-/tmp/media-s3-test}
MEMSTORE_BYTES=${S3_TEST_MEMSTORE_BYTES:-4294967296}
MON_PORT=${S3_TEST_MON_PORT:-3300}
WAIT_SECONDS=${S3_TEST_WAIT_SECONDS:-120}

HOST=127.0.0.1
REGION=us-east-1
BUCKET=media-test
ACCESS_KEY=media-test-access
SECRET_KEY=media-test-secret-0123456789abcdef # test-only credentials
USER_ID=media-test
ENDPOINT=http://$HOST:$PORT

MON_ID=a
MGR_ID=x
OSD_ID=0
RGW_NAME=client.rgw.media
PACKAGES=(radosgw ceph-mon ceph-osd ceph-mgr)
COMMANDS=(radosgw radosgw-admin ceph-mon ceph-osd ceph-mgr monmaptool ceph)
DAEMON_BINS=" radosgw ceph-osd ceph-mgr ceph-mon "
MARKER=.s3-test-server # in $DIR: the directory is ours and may be wiped

CONF=$DIR/ceph.conf
LOGDIR=$DIR/log
RUNDIR=$DIR/run

T0=$SECONDS
TMP_TO_CLEAN=
trap 'if [[ -n $TMP_TO_CLEAN ]]; then rm -rf "$TMP_TO_CLEAN"; fi' EXIT

say() { echo "s3-test-server: $*" >&2; }
die() {
  echo "s3-test-server: ERROR: $*" >&2
  exit 1
}
elapsed() { echo "$((SECONDS - T0))s"; }

[[ $PORT =~ ^[0-9]+$ ]] || die "S3_TEST_PORT must be a port number, got '$PORT'"
[[ $MON_PORT =~ ^[0-9]+$ ]] || die "S3_TEST_MON_PORT must be a port number, got '$MON_PORT'"
[[ $MEMSTORE_BYTES =~ ^[0-9]+$ ]] || die "S3_TEST_MEMSTORE_BYTES must be a number of bytes, got '$MEMSTORE_BYTES'"
[[ $WAIT_SECONDS =~ ^[0-9]+$ ]] || die "S3_TEST_WAIT_SECONDS must be a number, got '$WAIT_SECONDS'"
[[ $DIR == /* ]] || die "S3_TEST_DIR must be an absolute path, got '$DIR'"
DIR=${DIR%/}
[[ -n $DIR ]] || die "S3_TEST_DIR must not be /"

# Run privileged commands directly as root, else via sudo when available.
if [[ $EUID -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=()
fi
as_root() { "${SUDO[@]}" "$@"; }

print_env() {
  cat <<EOF
S3_ENDPOINT=$ENDPOINT
S3_REGION=$REGION
S3_BUCKET=$BUCKET
S3_ACCESS_KEY_ID=$ACCESS_KEY
S3_SECRET_ACCESS_KEY=$SECRET_KEY
S3_FORCE_PATH_STYLE=true
EOF
}

# Something accepts TCP connections on host:port (no client tools needed).
port_open() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 2 bash -c ': </dev/tcp/$0/$1' "$1" "$2" 2>/dev/null
}

# ------------------------------------------------------------------ S3 calls

# s3_call SECRET METHOD PATH_AND_QUERY OUTFILE BODYFILE [curl args...]
# SigV4-signed request (curl --aws-sigv4); prints the HTTP status ("000" if no
# answer); the response body goes to OUTFILE; BODYFILE ("" for none) is sent
# as the request body. Two things curl 7.88 (Debian 12) does not do itself:
#  - send x-amz-content-sha256, which RGW needs to check the signature: we
#    send the body's SHA-256 (RGW checks it against the body, too);
#  - canonicalize the query string: it signs it as given, so pass it sorted,
#    with "key=" for valueless keys ("?uploads=", not "?uploads").
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_call() {
  local secret=$1 method=$2 path=$3 out=$4 body=$5 sha
  shift 5
  local args=(-X "$method")
  [[ $method == HEAD ]] && args=(--head)
  if [[ -n $body ]]; then
    sha=$(sha256sum <"$body") || return 1
    args+=(--data-binary "@$body")
  else
    sha=$EMPTY_SHA256
    [[ $method == PUT || $method == POST ]] && args+=(-H 'Content-Length: 0')
  fi
  curl -sS -o "$out" -w '%{http_code}' --max-time 60 \
    --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$secret" \
    -H "x-amz-content-sha256: ${sha%% *}" "${args[@]}" "$@" "$ENDPOINT$path" 2>/dev/null || true
}

# HEAD of our bucket with our keys answers 200: the server is usable.
rgw_ok() {
  port_open "$HOST" "$PORT" || return 1
  [[ $(s3_call "$SECRET_KEY" HEAD "/$BUCKET" /dev/null "" --max-time 10) == 200 ]]
}

# Our cluster's OSD is full (memstore cap reached): RADOS then blocks every
# write, so PUTs and even DELETEs hang while reads still work. Only checked
# for a cluster of $DIR; a failing check counts as "not full".
cluster_full() {
  [[ -f $CONF ]] && command -v ceph >/dev/null 2>&1 || return 1
  timeout 10 ceph -c "$CONF" --connect-timeout 5 health 2>/dev/null | grep -qE '(^|[^a-z])[0-9]+ full osd'
}

# ---------------------------------------------------------------- packages

APT_UPDATED=

ensure_packages() {
  local c missing=()
  for c in "${COMMANDS[@]}"; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  command -v apt-get >/dev/null 2>&1 ||
    die "missing ${missing[*]} and apt-get is not available; install ${PACKAGES[*]} yourself"
  local log t=$SECONDS
  log=$(mktemp "${TMPDIR:-/tmp}/s3-test-server-apt.XXXXXX")
  say "installing ${PACKAGES[*]} with apt-get (missing: ${missing[*]})"
  if [[ -z $APT_UPDATED ]]; then
    as_root apt-get update -qq >>"$log" 2>&1 || {
      tail -n 30 "$log" >&2
      rm -f "$log"
      die "apt-get update failed"
    }
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends -o Dpkg::Use-Pty=0 "${PACKAGES[@]}" >>"$log" 2>&1 || {
    tail -n 40 "$log" >&2
    rm -f "$log"
    die "apt-get install ${PACKAGES[*]} failed"
  }
  rm -f "$log"
  for c in "${COMMANDS[@]}"; do
    command -v "$c" >/dev/null 2>&1 || die "installed ${PACKAGES[*]} but '$c' is still not on PATH"
  done
  say "installed ${PACKAGES[*]} in $((SECONDS - t))s ($(ceph --version 2>/dev/null | awk '{print $3}'))"
}

# ----------------------------------------------------------------- daemons

# Pids of the Ceph daemons started with -c $CONF: those in our pid files and,
# in case the pid files are gone, any such process found in /proc.
our_pids() {
  local f pid p cmd argv0
  local -A seen=()
  for f in "$RUNDIR"/*.pid; do
    [[ -f $f ]] || continue
    pid=$(<"$f") || continue
    [[ $pid =~ ^[0-9]+$ ]] && seen[$pid]=1
  done
  for p in /proc/[0-9]*; do
    seen[${p#/proc/}]=1
  done 2>/dev/null
  for pid in "${!seen[@]}"; do
    cmd=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || continue
    argv0=$(head -n 1 <<<"$cmd")
    argv0=${argv0##*/}
    [[ $DAEMON_BINS == *" $argv0 "* ]] || continue
    grep -qxF -- "$CONF" <<<"$cmd" || continue
    echo "$pid $argv0"
  done
}

# Some of the pids still run (zombies count as gone: PID 1 of some containers
# and VMs reaps orphans only every second or two).
any_alive() {
  local pid st
  for pid; do
    st=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    st=${st##*) }
    [[ ${st:0:1} == Z ]] || return 0
  done
  return 1
}

# The daemon (e.g. osd.0) runs, by its pid file.
daemon_alive() {
  local pid
  pid=$(cat "$RUNDIR/$1.pid" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] && any_alive "$pid"
}

# Stop our daemons: radosgw first (it hangs on exit if the OSD is gone), the
# monitor last (the others tell it they are going); TERM, then KILL after 15 s.
# With "kill": KILL at once (before a wipe: the state is thrown away anyway).
stop_daemons() {
  local sig=TERM list group pid bin pids=() i
  [[ ${1:-} == kill ]] && sig=KILL
  list=$(our_pids)
  [[ -n $list ]] || return 0
  for group in radosgw "ceph-osd ceph-mgr" ceph-mon; do
    pids=()
    while read -r pid bin; do
      [[ " $group " == *" $bin "* ]] && pids+=("$pid")
    done <<<"$list"
    [[ ${#pids[@]} -gt 0 ]] || continue
    [[ -n ${S3_TEST_DEBUG:-} ]] && say "stopping $group (${pids[*]}) at $(elapsed)"
    kill -"$sig" "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      any_alive "${pids[@]}" || break
      sleep 0.1
    done
    if any_alive "${pids[@]}"; then
      say "$group (${pids[*]}) did not exit within 15s; killing"
      kill -KILL "${pids[@]}" 2>/dev/null || true
      sleep 0.5
    fi
  done
}

log_tail() { # daemon name, e.g. osd.0
  local f
  for f in "$LOGDIR/$1.log" "$LOGDIR/$1.out"; do
    if [[ -s $f ]]; then
      echo "----- last lines of $f -----" >&2
      tail -n 30 "$f" >&2
      echo "-----" >&2
    fi
  done
}

# A start failed: show the log, stop the half-started cluster (keeping $DIR
# with its logs for a look), exit.
fail() { # daemon-name message
  log_tail "$1"
  stop_daemons kill
  die "$2 (logs in $LOGDIR; cluster stopped)"
}

# Run a Ceph command; its output goes to $LOGDIR/<name>.out, shown on failure.
# Closes fd 9 (the start lock): the daemons must not inherit and hold it.
run_logged() { # name command...
  local name=$1
  shift
  "$@" 9>&- >>"$LOGDIR/$name.out" 2>&1 || fail "$name" "'$*' failed"
}

ceph_cli() {
  timeout 20 ceph -c "$CONF" --connect-timeout 10 "$@"
}

DEADLINE=0
time_left() { ((SECONDS < DEADLINE)); }

# Wipe $DIR, but only if it is empty or was made by this script.
wipe_dir() {
  if [[ -e $DIR ]]; then
    if [[ ! -f $DIR/$MARKER ]] && [[ -n $(ls -A "$DIR" 2>/dev/null) ]]; then
      die "$DIR exists, is not empty and was not made by this script; refusing to wipe it (set S3_TEST_DIR elsewhere)"
    fi
    rm -rf "$DIR"
  fi
  mkdir -p "$DIR" "$LOGDIR" "$RUNDIR" "$DIR/mon.$MON_ID" "$DIR/mgr.$MGR_ID" \
    "$DIR/osd.$OSD_ID" "$DIR/rgw"
  echo "made by scripts/s3-test-server.sh; wiped on every cold start" >"$DIR/$MARKER"
}

write_conf() {
  local fsid=$1
  cat >"$CONF" <<EOF
# Written by scripts/s3-test-server.sh: single-node test cluster, NOT secure.
[global]
fsid = $fsid
mon host = v2:$HOST:$MON_PORT
mon initial members = $MON_ID
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms mon service mode = crc
ms mon cluster mode = crc
ms client mode = crc
ms service mode = crc
ms cluster mode = crc
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
mon data avail warn = 10
osd crush chooseleaf type = 0
osd pool default pg autoscale mode = off
osd pool default pg num = 8
run dir = $RUNDIR
log file = $LOGDIR/\$name.log
mon cluster log file = $LOGDIR/cluster.log
log to syslog = false
crash dir = $DIR/crash

[mon]
# A single monitor: commit map changes at once instead of batching them for
# 1 s; radosgw's pool creations on start and on the first bucket and multipart
# upload are sequences of such changes.
paxos propose interval = 0.01
mon data = $DIR/mon.\$id
pid file = $RUNDIR/\$name.pid
admin socket = $RUNDIR/\$name.asok

[mgr]
public addr = $HOST
mgr data = $DIR/mgr.\$id
pid file = $RUNDIR/\$name.pid
admin socket = $RUNDIR/\$name.asok

[osd]
public addr = $HOST
cluster addr = $HOST
osd data = $DIR/osd.\$id
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd max object name len = 460
osd max object namespace len = 64
pid file = $RUNDIR/\$name.pid
admin socket = $RUNDIR/\$name.asok

[$RGW_NAME]
rgw frontends = beast endpoint=$HOST:$PORT
rgw data = $DIR/rgw
# Reclaim the space of deleted objects and aborted uploads soon (default:
# after 2 h), or the RAM-backed OSD fills up during benchmarks.
rgw gc obj min wait = 30
rgw gc processor period = 30
pid file = $RUNDIR/\$name.pid
admin socket = $RUNDIR/\$name.asok
EOF
}

start_cluster() {
  local t fsid osd_uuid osd_id i code

  DEADLINE=$((SECONDS + WAIT_SECONDS))
  stop_daemons kill
  # Daemons just killed (e.g. of a full cluster being rebuilt) may hold their ports a moment longer.
  for ((i = 0; i < 100; i++)); do
    port_open "$HOST" "$PORT" || port_open "$HOST" "$MON_PORT" || break
    sleep 0.1
  done
  if port_open "$HOST" "$PORT"; then
    die "something else listens on $HOST:$PORT but does not accept our S3 keys; stop it or set S3_TEST_PORT"
  fi
  if port_open "$HOST" "$MON_PORT"; then
    die "something else listens on $HOST:$MON_PORT (the Ceph monitor port; another cluster?); stop it or set S3_TEST_MON_PORT"
  fi
  wipe_dir
  say "starting a fresh single-node Ceph cluster in $DIR"

  fsid=$(cat /proc/sys/kernel/random/uuid)
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$fsid"

  # --- monitor
  t=$SECONDS
  run_logged mon.$MON_ID monmaptool --create --fsid "$fsid" \
    --addv "$MON_ID" "[v2:$HOST:$MON_PORT]" "$DIR/monmap"
  run_logged mon.$MON_ID ceph-mon -c "$CONF" -i "$MON_ID" --mkfs --monmap "$DIR/monmap"
  run_logged mon.$MON_ID ceph-mon -c "$CONF" -i "$MON_ID"
  until ceph_cli mon stat >/dev/null 2>&1; do
    time_left || fail mon.$MON_ID "the monitor did not answer within ${WAIT_SECONDS}s"
    sleep 0.5
  done
  say "mon.$MON_ID up ($((SECONDS - t))s)"

  # --- manager (not needed for I/O; started for a healthy-looking cluster)
  run_logged mgr.$MGR_ID ceph-mgr -c "$CONF" -i "$MGR_ID"

  # --- OSD
  t=$SECONDS
  osd_id=$(ceph_cli osd new "$osd_uuid" 2>>"$LOGDIR/osd.$OSD_ID.out") ||
    fail osd.$OSD_ID "'ceph osd new' failed"
  [[ $osd_id == "$OSD_ID" ]] || fail osd.$OSD_ID "'ceph osd new' gave id '$osd_id', expected $OSD_ID"
  run_logged osd.$OSD_ID ceph-osd -c "$CONF" -i "$OSD_ID" --mkfs --osd-uuid "$osd_uuid"
  run_logged osd.$OSD_ID ceph-osd -c "$CONF" -i "$OSD_ID"
  until ceph_cli osd dump 2>/dev/null | grep -q "^osd\.$OSD_ID up "; do
    time_left || fail osd.$OSD_ID "osd.$OSD_ID did not come up within ${WAIT_SECONDS}s"
    daemon_alive osd.$OSD_ID || ((SECONDS - t < 5)) || fail osd.$OSD_ID "osd.$OSD_ID exited"
    sleep 0.5
  done
  say "osd.$OSD_ID up ($((SECONDS - t))s, memstore capped at $MEMSTORE_BYTES bytes)"

  # --- radosgw (creates its pools on start)
  t=$SECONDS
  run_logged "$RGW_NAME" radosgw -c "$CONF" -n "$RGW_NAME"
  while :; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$ENDPOINT/" 2>/dev/null || true)
    [[ $code == 200 ]] && break
    time_left || fail "$RGW_NAME" "radosgw did not answer on $ENDPOINT within ${WAIT_SECONDS}s (last HTTP status: $code)"
    daemon_alive "$RGW_NAME" || ((SECONDS - t < 5)) || fail "$RGW_NAME" "radosgw exited"
    sleep 0.5
  done
  say "radosgw up on $ENDPOINT ($((SECONDS - t))s)"

  # --- user with fixed keys
  run_logged radosgw-admin timeout 60 radosgw-admin -c "$CONF" user create \
    --uid="$USER_ID" --display-name="media service tests" \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY"
}

# Create the bucket, do one multipart upload and one PUT (pays for the pool
# creation the first multipart upload causes), check that a wrong secret is
# refused. Leaves the bucket empty.
prepare_bucket() {
  local tmp code upload_id etag key=s3-test-server-warmup i t=$SECONDS
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3-test-server.XXXXXX")
  TMP_TO_CLEAN=$tmp

  # The user may need a moment to be visible to radosgw.
  for ((i = 0; i < 20; i++)); do
    code=$(s3_call "$SECRET_KEY" PUT "/$BUCKET" "$tmp/body" "")
    [[ $code == 200 ]] && break
    sleep 0.5
  done
  [[ $code == 200 ]] || {
    cat "$tmp/body" >&2 2>/dev/null || true
    fail "$RGW_NAME" "creating bucket $BUCKET failed with HTTP $code"
  }

  code=$(s3_call "$SECRET_KEY" POST "/$BUCKET/$key?uploads=" "$tmp/body" "")
  upload_id=$(sed -n 's:.*<UploadId>\([^<]*\)</UploadId>.*:\1:p' "$tmp/body" 2>/dev/null)
  [[ $code == 200 && -n $upload_id ]] || {
    cat "$tmp/body" >&2 2>/dev/null || true
    fail "$RGW_NAME" "warm-up: CreateMultipartUpload failed with HTTP $code"
  }
  printf 'warm-up part\n' >"$tmp/part"
  code=$(s3_call "$SECRET_KEY" PUT "/$BUCKET/$key?partNumber=1&uploadId=$upload_id" "$tmp/body" "$tmp/part" \
    -D "$tmp/headers" -H 'Content-Type: application/octet-stream')
  etag=$(tr -d '\r' <"$tmp/headers" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p')
  [[ $code == 200 && -n $etag ]] || fail "$RGW_NAME" "warm-up: UploadPart failed with HTTP $code"
  printf '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>' \
    "$etag" >"$tmp/complete"
  code=$(s3_call "$SECRET_KEY" POST "/$BUCKET/$key?uploadId=$upload_id" "$tmp/body" "$tmp/complete" \
    -H 'Content-Type: application/xml')
  [[ $code == 200 ]] || {
    cat "$tmp/body" >&2 2>/dev/null || true
    fail "$RGW_NAME" "warm-up: CompleteMultipartUpload failed with HTTP $code"
  }
  code=$(s3_call "$SECRET_KEY" PUT "/$BUCKET/$key" "$tmp/body" "$tmp/part" \
    -H 'Content-Type: application/octet-stream')
  [[ $code == 200 ]] || fail "$RGW_NAME" "warm-up: PutObject failed with HTTP $code"
  code=$(s3_call "$SECRET_KEY" GET "/$BUCKET/$key" "$tmp/got" "")
  if [[ $code != 200 ]] || ! cmp -s "$tmp/got" "$tmp/part"; then
    fail "$RGW_NAME" "warm-up: GetObject failed with HTTP $code or returned other bytes"
  fi
  code=$(s3_call "$SECRET_KEY" DELETE "/$BUCKET/$key" "$tmp/body" "")
  [[ $code == 204 ]] || fail "$RGW_NAME" "warm-up: DeleteObject failed with HTTP $code"

  verify_signature_check "$tmp"
  rm -rf "$tmp"
  say "bucket $BUCKET created, multipart upload warmed up, wrong secret refused with 403 ($((SECONDS - t))s)"
}

# A request signed with a wrong secret must be refused with 403.
verify_signature_check() {
  local code
  code=$(s3_call "${SECRET_KEY}-wrong" HEAD "/$BUCKET" /dev/null "")
  [[ $code == 403 ]] ||
    die "a request signed with a WRONG secret got HTTP $code instead of 403: this server does not check signatures, the tests would prove nothing"
  code=$(s3_call "${SECRET_KEY}-wrong" PUT "/$BUCKET/s3-test-server-forged" "$1/body" "$1/part")
  [[ $code == 403 ]] ||
    die "a PUT signed with a WRONG secret got HTTP $code instead of 403: this server does not check signatures"
}

# ------------------------------------------------------------------ commands

# Usable: answers with our keys, and our OSD is not full. Else says why.
usable() {
  if ! rgw_ok; then
    say "nothing answers at $ENDPOINT with our keys and bucket"
    return 1
  fi
  if cluster_full; then
    say "the cluster in $DIR is FULL (its memstore cap, $(sed -n 's/^memstore device bytes = //p' "$CONF") bytes, is reached): writes and deletes hang; a start rebuilds it empty"
    return 1
  fi
}

cmd_start() {
  if usable; then
    say "already running at $ENDPOINT ($(elapsed))"
    print_env
    return 0
  fi
  mkdir -p "$(dirname "$DIR")"
  # One start at a time per directory; the lock lives next to it, as the
  # directory itself is wiped.
  exec 9>"$DIR.lock"
  if ! flock -n 9; then
    say "another start for $DIR is running; waiting for it"
    flock -w $((WAIT_SECONDS + 180)) 9 || die "another '$0 start' holds $DIR.lock for too long"
    if usable; then
      say "started meanwhile by someone else at $ENDPOINT ($(elapsed))"
      print_env
      return 0
    fi
  fi
  ensure_packages
  start_cluster
  prepare_bucket
  say "ready at $ENDPOINT, bucket $BUCKET ($(elapsed) in all; stop with: $0 stop)"
  print_env
}

cmd_stop() {
  if [[ -z $(our_pids) ]]; then
    say "no daemons of $DIR are running"
    return 0
  fi
  stop_daemons
  [[ -z $(our_pids) ]] || die "some daemons of $DIR are still running: $(our_pids | tr '\n' ' ')"
  say "stopped the daemons of $DIR"
}

cmd_status() {
  if usable; then
    say "running at $ENDPOINT (bucket $BUCKET answers with our keys)"
    return 0
  fi
  return 1
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
