#!/bin/bash
# First start of the local overlay's PostgreSQL: one role and database per stateful service
# (host, capabilities, resources' result store), the warehouse, and its two roles (resources reads as tessera_reader;
# the broker writes data changes as tessera_writer; `tessera seed` grants them their tables).
# Passwords come from the postgres-identity Secret, one file per role; they never reach argv.
set -euo pipefail
secrets=/etc/tessera/postgres
password() { tr -d '\n' < "$secrets/$1_password"; }
sql_literal() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }
for role in tessera_host tessera_capabilities tessera_resources tessera_reader tessera_writer; do
  psql -v ON_ERROR_STOP=1 -q <<SQL
CREATE ROLE $role LOGIN PASSWORD $(sql_literal "$(password "$role")");
SQL
done
psql -v ON_ERROR_STOP=1 -q <<'SQL'
CREATE DATABASE tessera_host OWNER tessera_host;
CREATE DATABASE tessera_capabilities OWNER tessera_capabilities;
CREATE DATABASE tessera_resources OWNER tessera_resources;
CREATE DATABASE warehouse;
SQL
