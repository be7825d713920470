#!/usr/bin/env bash
# Make sure the services the test suite needs are up on this machine:
#   - PostgreSQL at 127.0.0.1:5432, user "postgres", trust auth (no password)
#   - Redis      at 127.0.0.1:6379
#
# Used by .ci/run and usable by hand on a Debian/Ubuntu dev box. Idempotent:
# if both services already answer it only checks them (well under a second).
# Otherwise it starts an existing Debian PostgreSQL cluster / Redis, or
# installs them with apt-get (needs root or sudo). Does not use systemctl.
#
# Prints one line per service on success; on failure prints what went wrong
# (with the relevant log tail) and exits non-zero.
set -euo pipefail

PG_HOST=127.0.0.1
PG_PORT=5432
REDIS_HOST=127.0.0.1
REDIS_PORT=6379
WAIT_SECONDS=30

die() {
  echo "ensure-services: ERROR: $*" >&2
  exit 1
}

# Run privileged commands directly as root, else via sudo when available.
if [[ $EUID -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=()
fi
as_root() { "${SUDO[@]}" "$@"; }

# Something accepts TCP connections on host:port (no client tools needed).
port_open() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 2 bash -c ': </dev/tcp/$0/$1' "$1" "$2" 2>/dev/null
}

APT_UPDATED=
APT_LOG=$(mktemp "${TMPDIR:-/tmp}/ensure-services-apt.XXXXXX")
trap 'rm -f "$APT_LOG"' EXIT

apt_install() {
  command -v apt-get >/dev/null 2>&1 ||
    die "need to install $* but apt-get is not available; install it yourself"
  if [[ -z $APT_UPDATED ]]; then
    as_root apt-get update -qq >>"$APT_LOG" 2>&1 || {
      tail -n 30 "$APT_LOG" >&2
      die "apt-get update failed"
    }
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends -o Dpkg::Use-Pty=0 "$@" >>"$APT_LOG" 2>&1 || {
    tail -n 30 "$APT_LOG" >&2
    die "apt-get install $* failed"
  }
}

# ---------------------------------------------------------------- PostgreSQL

pg_ready() {
  command -v pg_isready >/dev/null 2>&1 &&
    pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 2
}

pg_wait_ready() {
  local i
  for ((i = 0; i < WAIT_SECONDS; i++)); do
    pg_ready && return 0
    sleep 1
  done
  return 1
}

# Passwordless login as postgres over TCP (ignore any ~/.pgpass / PGPASSWORD,
# never prompt).
pg_trust_ok() {
  env -u PGPASSWORD PGPASSFILE=/nonexistent/.pgpass PGCONNECT_TIMEOUT=5 \
    psql -w -X -q -At -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres \
    -c 'select 1' 2>&1
}

pg_verify() {
  local out
  if out=$(pg_trust_ok) && [[ $out == 1 ]]; then
    return 0
  fi
  die "PostgreSQL answers at $PG_HOST:$PG_PORT but 'psql -h $PG_HOST -U postgres' without password failed:
  $out
Set the 'host all all 127.0.0.1/32' (and ::1/128, local) lines in pg_hba.conf to 'trust' and reload."
}

# Highest installed server version, e.g. 15.
pg_installed_version() {
  local d
  # shellcheck disable=SC2012 # plain version directory names
  d=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -n 1) || true
  [[ -n $d ]] || return 1
  d=${d#/usr/lib/postgresql/}
  echo "${d%%/*}"
}

# "<version> <cluster>" of an existing Debian cluster: the one configured for
# port 5432 if any, else the first version's "main" cluster.
pg_existing_cluster() {
  local c=
  if command -v pg_lsclusters >/dev/null 2>&1; then
    c=$(pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p { print $1, $2; exit }') || true
  fi
  if [[ -z $c && -d /etc/postgresql ]]; then
    local v
    # shellcheck disable=SC2012 # plain version directory names
    v=$(ls /etc/postgresql 2>/dev/null | head -n 1) || true
    [[ -n $v && -f /etc/postgresql/$v/main/postgresql.conf ]] && c="$v main"
  fi
  [[ -n $c ]] || return 1
  echo "$c"
}

pg_log_tail() {
  local f=/var/log/postgresql/postgresql-$1-$2.log
  if [[ -r $f ]]; then tail -n 20 "$f" >&2; fi
}

pg_socket_dir() {
  [[ -d /var/run/postgresql ]] ||
    as_root install -d -m 2775 -o postgres -g postgres /var/run/postgresql
}

pg_start_cluster() { # version cluster action(start|restart)
  local out
  pg_socket_dir
  out=$(as_root pg_ctlcluster --skip-systemctl-redirect "$1" "$2" "$3" 2>&1) || {
    echo "$out" >&2
    pg_log_tail "$1" "$2"
    die "pg_ctlcluster $1 $2 $3 failed"
  }
  pg_wait_ready || {
    pg_log_tail "$1" "$2"
    die "PostgreSQL cluster $1/$2 did not become ready at $PG_HOST:$PG_PORT within ${WAIT_SECONDS}s (is it configured for listen_addresses='$PG_HOST', port=$PG_PORT?)"
  }
}

# Fresh install: make cluster <v>/main listen on 127.0.0.1:5432 with trust auth.
pg_configure_cluster() {
  local v=$1 dir=/etc/postgresql/$1/main
  as_root install -d -o postgres -g postgres "$dir/conf.d"
  printf "%s\n" "# written by scripts/ensure-services.sh" \
    "listen_addresses = '$PG_HOST'" "port = $PG_PORT" |
    as_root tee "$dir/conf.d/90-ci.conf" >/dev/null
  printf "%s\n" "# written by scripts/ensure-services.sh: trust everything local (CI/dev only)" \
    "local   all          all                 trust" \
    "host    all          all   127.0.0.1/32  trust" \
    "host    all          all   ::1/128       trust" \
    "local   replication  all                 trust" \
    "host    replication  all   127.0.0.1/32  trust" \
    "host    replication  all   ::1/128       trust" |
    as_root tee "$dir/pg_hba.conf" >/dev/null
  as_root chown postgres:postgres "$dir/conf.d/90-ci.conf" "$dir/pg_hba.conf"
}

ensure_postgres() {
  local what c v

  if pg_wait_ready_quick; then
    if ! command -v psql >/dev/null 2>&1; then
      apt_install postgresql-client
    fi
    what="already running"
  elif ! command -v pg_isready >/dev/null 2>&1 && port_open "$PG_HOST" "$PG_PORT"; then
    # A server we do not manage (e.g. a container) answers; only get the client.
    apt_install postgresql-client
    pg_wait_ready || die "something listens on $PG_HOST:$PG_PORT but pg_isready does not accept it as PostgreSQL"
    what="already running (installed postgresql-client)"
  elif c=$(pg_existing_cluster); then
    read -r v c <<<"$c"
    if pg_ctlcluster "$v" "$c" status >/dev/null 2>&1; then
      die "PostgreSQL cluster $v/$c is running but does not answer at $PG_HOST:$PG_PORT; check listen_addresses and port in /etc/postgresql/$v/$c (pg_lsclusters)"
    fi
    pg_start_cluster "$v" "$c" start
    what="started cluster $v/$c"
  else
    if ! v=$(pg_installed_version) || ! command -v pg_createcluster >/dev/null 2>&1; then
      apt_install postgresql
      v=$(pg_installed_version) || die "postgresql installed but no server binary found under /usr/lib/postgresql"
      what="installed postgresql $v"
    else
      what="postgresql $v already installed"
    fi
    if [[ ! -f /etc/postgresql/$v/main/postgresql.conf ]]; then
      as_root pg_createcluster "$v" main --port "$PG_PORT" >>"$APT_LOG" 2>&1 || {
        tail -n 20 "$APT_LOG" >&2
        die "pg_createcluster $v main failed"
      }
    fi
    pg_configure_cluster "$v"
    # restart: the package may or may not have started the cluster already.
    pg_start_cluster "$v" main restart
    what="$what, configured and started cluster $v/main"
  fi

  pg_verify
  echo "postgresql: $what ($PG_HOST:$PG_PORT, trust auth for postgres)"
}

# pg_isready exit 1 means "rejecting connections" (e.g. still starting up):
# wait for it then; any other failure means nothing usable is there.
pg_wait_ready_quick() {
  command -v pg_isready >/dev/null 2>&1 || return 1
  local rc=0
  pg_isready -q -h "$PG_HOST" -p "$PG_PORT" -t 2 || rc=$?
  case $rc in
    0) return 0 ;;
    1) pg_wait_ready ;;
    *) return 1 ;;
  esac
}

# --------------------------------------------------------------------- Redis

redis_pong() {
  command -v redis-cli >/dev/null 2>&1 &&
    [[ $(timeout 5 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
}

redis_wait_pong() {
  local i
  for ((i = 0; i < WAIT_SECONDS; i++)); do
    redis_pong && return 0
    sleep 1
  done
  return 1
}

ensure_redis() {
  local what="" log=/var/log/redis/ci.log

  if redis_pong; then
    echo "redis: already running ($REDIS_HOST:$REDIS_PORT)"
    return 0
  fi

  if port_open "$REDIS_HOST" "$REDIS_PORT"; then
    # Something is listening; maybe only the client is missing.
    if ! command -v redis-cli >/dev/null 2>&1; then
      apt_install redis-tools
      redis_pong && {
        echo "redis: already running ($REDIS_HOST:$REDIS_PORT, installed redis-tools)"
        return 0
      }
    fi
    die "something listens on $REDIS_HOST:$REDIS_PORT but does not answer PING with PONG (password set? not redis?): $(timeout 5 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>&1 || true)"
  fi

  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    apt_install redis-server
    what="installed redis-server, "
    # The package's own init script may have started it (not in containers
    # with a policy-rc.d that forbids it).
    if redis_wait_pong_short; then
      echo "redis: ${what}started by the package ($REDIS_HOST:$REDIS_PORT)"
      return 0
    fi
  fi

  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind "$REDIS_HOST" -::1 --port "$REDIS_PORT" \
    --save "" --appendonly no --dir /var/lib/redis --logfile "$log" >/dev/null 2>&1 || {
    [[ -r $log ]] && tail -n 20 "$log" >&2
    die "redis-server failed to start"
  }
  redis_wait_pong || {
    [[ -r $log ]] && tail -n 20 "$log" >&2
    die "redis-server did not answer PONG at $REDIS_HOST:$REDIS_PORT within ${WAIT_SECONDS}s (log: $log)"
  }
  echo "redis: ${what}started redis-server ($REDIS_HOST:$REDIS_PORT)"
}

redis_wait_pong_short() {
  local i
  for ((i = 0; i < 3; i++)); do
    redis_pong && return 0
    sleep 1
  done
  return 1
}

ensure_postgres
ensure_redis
