#!/bin/bash
# Entrypoint of localhost/tessera-postgres:15 (see Containerfile beside this file).
#
#   (no arguments) | postgres [OPTION...]   set the cluster up on first start, then run the
#                                          server on 0.0.0.0:5432 with the extra OPTIONs
#   -c name=value ...                      the same (options only)
#   anything else (pg_isready, psql, bash)  run as given
#
# Environment: PGDATA (default /var/lib/postgresql/data/pgdata), POSTGRES_PASSWORD_FILE
# (needed on first start: the superuser's password, first line), POSTGRES_INIT_DIR (default
# /docker-entrypoint-initdb.d), POSTGRES_INITDB_ARGS (extra initdb arguments).
#
# First start = no $PGDATA/PG_VERSION. The init scripts run with PGHOST (the socket), PGPORT,
# PGUSER=postgres and PGDATABASE=postgres exported, so a *.sh script's plain `psql` reaches the
# temporary server as the superuser; they also see this container's other variables and files
# (e.g. a role's password file). A failure removes the half-made cluster, so the next start
# tries again from scratch; a start that finds the marker of an interrupted first start
# refuses to guess and says so.
set -Eeuo pipefail

: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
: "${POSTGRES_INIT_DIR:=/docker-entrypoint-initdb.d}"
socket_dir=/run/postgresql  # = /var/run/postgresql (/var/run -> /run), libpq's default
export PGDATA

log() { printf 'tessera-postgres: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && [ "$1" != postgres ]; then
  exec "$@"
fi
[ "${1:-}" != postgres ] || shift

uid="$(id -u)"
[ "$uid" != 0 ] || die "the server does not run as root: run as uid 10002, the image's user"
getent passwd "$uid" >/dev/null || die "uid $uid has no passwd entry in the image: run as 10002"

incomplete="$PGDATA/tessera-init-incomplete"

# Undoes a first start that failed part-way: stop the temporary server, empty $PGDATA.
abandon_init() {
  log "first start failed: removing the half-made cluster in $PGDATA (the next start begins again)"
  pg_ctl -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
  find "$PGDATA" -mindepth 1 -delete 2>/dev/null || true
}

init_cluster() {
  mkdir -p "$PGDATA" 2>/dev/null \
    || die "cannot create $PGDATA: mount a volume at $(dirname "$PGDATA") that uid $uid can write"
  [ -w "$PGDATA" ] || die "$PGDATA is not writable by uid $uid"
  [ -z "$(ls -A "$PGDATA")" ] || die "$PGDATA holds files but no cluster (no PG_VERSION): not touching it"
  mkdir -p "$socket_dir" 2>/dev/null || true
  [ -w "$socket_dir" ] || die "$socket_dir is not writable by uid $uid: mount an emptyDir there (podman: --tmpfs $socket_dir:U)"
  local pwfile="${POSTGRES_PASSWORD_FILE:-}"
  [ -n "$pwfile" ] || die "POSTGRES_PASSWORD_FILE is not set: name the file with the superuser's password"
  [ -r "$pwfile" ] && [ -s "$pwfile" ] || die "POSTGRES_PASSWORD_FILE=$pwfile is missing, unreadable or empty"
  if [ -e "$POSTGRES_INIT_DIR" ] && [ ! -d "$POSTGRES_INIT_DIR" ]; then
    die "POSTGRES_INIT_DIR=$POSTGRES_INIT_DIR is not a directory"
  fi

  log "first start: initdb in $PGDATA"
  trap abandon_init ERR
  trap 'log "stopped during the first start"; abandon_init; exit 143' TERM INT
  # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is a list of words on purpose
  initdb --pgdata="$PGDATA" --username=postgres --pwfile="$pwfile" \
    --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 \
    --no-instructions ${POSTGRES_INITDB_ARGS:-} >&2
  : > "$incomplete"
  # The image leaves out LLVM, PostgreSQL's JIT provider.
  printf '\n# tessera-postgres: this image has no LLVM (JIT provider)\njit = off\n' >> "$PGDATA/postgresql.conf"
  # The superuser over the socket only as the OS user postgres (peer); any other role, and
  # everyone over TCP, with a SCRAM password.
  cat > "$PGDATA/pg_hba.conf" <<'EOF'
# Written by tessera-postgres on first start.
# TYPE  DATABASE  USER      ADDRESS    METHOD
local   all       postgres             peer
local   all       all                  scram-sha-256
host    all       all       0.0.0.0/0  scram-sha-256
host    all       all       ::/0       scram-sha-256
EOF

  # A temporary server on the socket only, for the init scripts.
  pg_ctl -D "$PGDATA" -w -t 60 -o "-c listen_addresses='' -c unix_socket_directories=$socket_dir" start >&2
  export PGHOST="$socket_dir" PGPORT=5432 PGUSER=postgres PGDATABASE=postgres
  local script ran=0
  if [ -d "$POSTGRES_INIT_DIR" ]; then
    # find -L: a Kubernetes ConfigMap's files are symlinks into its ..data directory
    while IFS= read -r -d '' script; do
      log "running $script"
      case "$script" in
        *.sql) psql -v ON_ERROR_STOP=1 --no-psqlrc --no-password -f "$script" >&2 ;;
        *.sh) bash "$script" >&2 ;;
      esac
      ran=$((ran + 1))
    done < <(find -L "$POSTGRES_INIT_DIR" -mindepth 1 -maxdepth 1 -type f \( -name '*.sql' -o -name '*.sh' \) \
               ! -name '.*' -print0 | LC_ALL=C sort -z)
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >&2
  unset PGHOST PGPORT PGUSER PGDATABASE
  trap - ERR TERM INT
  rm -f "$incomplete"
  log "first start: cluster ready ($ran init script(s) from $POSTGRES_INIT_DIR)"
}

if [ -e "$incomplete" ]; then
  die "$PGDATA was left by a first start that was interrupted (initdb or the init scripts did not finish): empty the volume and start again"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  init_cluster
fi

exec postgres -D "$PGDATA" -c listen_addresses=0.0.0.0 -c port=5432 -c unix_socket_directories="$socket_dir" "$@"
