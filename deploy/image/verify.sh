#!/usr/bin/env bash
# Checks the images deploy/image/build.sh made, the way a cluster runs them: read-only root,
# the images' numeric users, state only on mounted volumes, no network. Removes every
# container and temporary directory it made; leaves the images. Needs root (rootful podman).
#
#   deploy/image/verify.sh            # after `make image`
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export CONTAINERS_CONF="$root/deploy/image/containers.conf"
version="$(sed -n 's/^version *= *"\(.*\)"$/\1/p' pyproject.toml | head -n 1)"
tessera="localhost/tessera:$version"
postgres=localhost/tessera-postgres:15
tag="tessera-verify-$$"
work="$(mktemp -d)"
containers=()

cleanup() {
  local c
  for c in "${containers[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }

# --- tessera ------------------------------------------------------------------------------
mkdir -p "$work/tessera-var"
chown 10001:10001 "$work/tessera-var"
run_tessera() {
  podman run --rm --network=none --read-only --tmpfs /tmp -v "$work/tessera-var:/var/lib/tessera" \
    --user 10001 "$tessera" "$@"
}

run_tessera python -c 'import services.host, shared.gen, grpc, sqlalchemy' \
  && ok "tessera: import services.host, shared.gen, grpc, sqlalchemy (read-only root, uid 10001)" \
  || fail "tessera: imports"

out="$(run_tessera python -m services.compiler 2>&1)" && fail "tessera: services.compiler started without certificates"
grep -qi cert <<<"$out" || fail "tessera: services.compiler said: $out"
ok "tessera: python -m services.compiler stops on the missing certificates: $(tail -n 1 <<<"$out")"

for cmd in "python -m cli --help" "bin/tessera --help"; do
  # shellcheck disable=SC2086
  run_tessera $cmd | grep -q 'usage' && ok "tessera: $cmd" || fail "tessera: $cmd"
done

run_tessera test -s services/web/static/index.html && ok "tessera: services/web/static/index.html is there" \
  || fail "tessera: no services/web/static/index.html"
run_tessera test -s services/mcp/static/answer.html && ok "tessera: services/mcp/static/answer.html is there" \
  || fail "tessera: no services/mcp/static/answer.html"

out="$(run_tessera python -c '
import os, pathlib, shutil, sys
exe = shutil.which("python")
assert exe == "/opt/tessera/venv/bin/python", exe
assert os.getuid() == 10001 and os.environ["TESSERA_VAR_DIR"] == "/var/lib/tessera"
assert sys.flags.dont_write_bytecode
tools = [t for t in ("gcc", "cc", "make", "npm", "node", "pip", "pip3") if shutil.which(t)]
assert not tools, tools
for name in ("pytest", "playwright", "ruff", "grpc_tools", "hypothesis", "importlinter", "pip"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"{name} is in the image")
missing = [str(p) for p in pathlib.Path("/opt/tessera/app").rglob("*.py")
           if not list(p.parent.glob(f"__pycache__/{p.stem}.cpython-311.pyc"))]
assert not missing, missing[:5]
print("python on PATH is the venv; no compiler, npm, pip or dev tools; every app module precompiled")
')" && ok "tessera: $out" || fail "tessera: $out"

# --- tessera-postgres ---------------------------------------------------------------------
mkdir -p "$work/pgdata" "$work/init" "$work/secrets"
chown 10002:10002 "$work/pgdata"
printf 'superuser-secret\n' > "$work/secrets/postgres-password"
printf 'app-secret\n' > "$work/secrets/app-password"
chmod 0644 "$work/secrets/"*
cat > "$work/init/01-schema.sql" <<'EOF'
CREATE TABLE verify_marker (id integer PRIMARY KEY, note text NOT NULL);
INSERT INTO verify_marker VALUES (1, 'init ran');
EOF
cat > "$work/init/02-role.sh" <<'EOF'
set -eu
psql -v ON_ERROR_STOP=1 -v pw="$(cat "$APP_PASSWORD_FILE")" <<'SQL'
CREATE ROLE verify_app LOGIN PASSWORD :'pw';
GRANT SELECT ON verify_marker TO verify_app;
SQL
EOF
printf 'not sql;\n' > "$work/init/03-skipped.txt"

pg_run() { # NAME DATA-DIR INIT-DIR
  local name="$1"; containers+=("$name")
  podman run -d --name "$name" --network=none --read-only \
    --tmpfs /tmp --tmpfs /run/postgresql:U \
    -v "$2:/var/lib/postgresql/data" -v "$3:/docker-entrypoint-initdb.d:ro" \
    -v "$work/secrets:/run/secrets/tessera:ro" \
    -e POSTGRES_PASSWORD_FILE=/run/secrets/tessera/postgres-password \
    -e APP_PASSWORD_FILE=/run/secrets/tessera/app-password \
    "$postgres" >/dev/null
}
wait_ready() {
  local i
  for i in $(seq 1 60); do
    podman exec "$1" pg_isready -q -h 127.0.0.1 && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$1")" = true ] || break
    sleep 1
  done
  podman logs "$1" >&2 || true
  return 1
}

pg="$tag-postgres"
pg_run "$pg" "$work/pgdata" "$work/init"
wait_ready "$pg" && ok "postgres: pg_isready -h 127.0.0.1 (read-only root, uid 10002)" || fail "postgres: not ready"
[ "$(podman exec "$pg" psql -Atc 'select note from verify_marker')" = "init ran" ] \
  && ok "postgres: 01-schema.sql ran (superuser over the socket, peer)" || fail "postgres: init SQL"
[ "$(podman exec -e PGPASSWORD=app-secret "$pg" psql -h 127.0.0.1 -U verify_app -d postgres -Atc \
     'select current_user || count(*) from verify_marker')" = "verify_app1" ] \
  && ok "postgres: 02-role.sh made a role; it logs in over TCP with scram-sha-256" || fail "postgres: role from .sh"
podman exec -e PGPASSWORD=wrong "$pg" psql -h 127.0.0.1 -U postgres -Atc 'select 1' >/dev/null 2>&1 \
  && fail "postgres: a wrong password was accepted"
[ "$(podman exec -e PGPASSWORD=superuser-secret "$pg" psql -h 127.0.0.1 -U postgres -Atc \
     "select setting from pg_settings where name = 'password_encryption'")" = "scram-sha-256" ] \
  && ok "postgres: superuser password from POSTGRES_PASSWORD_FILE works over TCP; a wrong one does not" \
  || fail "postgres: superuser over TCP"
[ "$(podman exec "$pg" psql -Atc "select string_agg(setting, ',' order by name) from pg_settings
      where name in ('listen_addresses', 'port', 'jit')")" = "off,0.0.0.0,5432" ] \
  && ok "postgres: listens on 0.0.0.0:5432, jit off" || fail "postgres: settings"
podman stop -t 20 "$pg" >/dev/null
podman start "$pg" >/dev/null
wait_ready "$pg" || fail "postgres: not ready after a restart"
[ "$(podman logs "$pg" 2>&1 | grep -c 'running /docker-entrypoint-initdb.d/01-schema.sql')" = 1 ] \
  && [ "$(podman exec "$pg" psql -Atc 'select count(*) from verify_marker')" = 1 ] \
  && ok "postgres: restart keeps the data; init scripts ran once" || fail "postgres: restart"

# A failing init script: the container stops, the half-made cluster is removed (next start retries).
mkdir -p "$work/pgdata-bad" "$work/init-bad"
chown 10002:10002 "$work/pgdata-bad"
printf 'CREATE TABLE ok (id int);\nSELECT no_such_function();\n' > "$work/init-bad/01-broken.sql"
bad="$tag-postgres-bad"
pg_run "$bad" "$work/pgdata-bad" "$work/init-bad"
status="$(podman wait "$bad")"
[ "$status" != 0 ] && [ -z "$(ls -A "$work/pgdata-bad/pgdata" 2>/dev/null)" ] \
  && ok "postgres: a failing init script stops the first start (exit $status) and leaves no half-made cluster" \
  || fail "postgres: failing init script (exit $status)"

echo "all checks passed"
