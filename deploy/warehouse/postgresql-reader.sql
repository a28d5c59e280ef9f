-- The role Tessera's Resource Gateway reads a PostgreSQL warehouse with: it may connect and read the tables of
-- one schema, and nothing else. Run it as the database's owner (or a superuser), once per database:
--
--     psql "postgresql://OWNER@HOST/DB" -v reader=tessera_reader -v reader_password='...' \
--          -f deploy/warehouse/postgresql-reader.sql
--
-- Optional: -v schema=NAME (default public). Running it again changes nothing it already did, except the
-- password. The gateway also opens every transaction READ ONLY, so even a grant too wide here writes nothing
-- through Tessera; the role's own settings keep it so for anything else that connects as it.
\set ON_ERROR_STOP on
\if :{?schema}
\else
  \set schema public
\endif

BEGIN;
SELECT format('CREATE ROLE %I LOGIN', :'reader')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'reader') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION',
              :'reader', :'reader_password') \gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), :'reader') \gexec
GRANT USAGE ON SCHEMA :"schema" TO :"reader";
GRANT SELECT ON ALL TABLES IN SCHEMA :"schema" TO :"reader";
-- Tables the owner creates later are readable too (a table is seen only once the semantic model maps it).
ALTER DEFAULT PRIVILEGES IN SCHEMA :"schema" GRANT SELECT ON TABLES TO :"reader";
ALTER ROLE :"reader" SET default_transaction_read_only = on;
ALTER ROLE :"reader" SET statement_timeout = '60s';
COMMIT;
