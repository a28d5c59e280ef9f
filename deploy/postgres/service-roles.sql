-- One service's PostgreSQL database with two roles: the migrator owns the schema and alone may change it (the
-- migrate Job connects as it); the service's own role may read and write every table the migrations make, and
-- create, alter or drop nothing (the service runs with TESSERA_<SERVICE>_MIGRATIONS=await).
--
-- Once per stateful service (host, capabilities, resources' result store), as a superuser or, on managed
-- PostgreSQL, the administrator role, for example:
--   psql -v service=tessera_host -v migrator=tessera_host_migrator -v database=tessera_host \
--        -f deploy/postgres/service-roles.sql
-- then give both roles passwords with psql's \password (never in a file or on a command line), and put the
-- URLs in the Secrets: the migrator's in migrate-<service> (tessera_<service>_migrator_url), the service's in
-- <service>-identity (docs/deploy-kubernetes.md, "Migrations"). An existing database whose service role owns
-- its tables moves to this with service-roles-upgrade.sql.
\set ON_ERROR_STOP on
CREATE ROLE :"migrator" LOGIN;
-- A managed server's administrator is no superuser: it must belong to the migrator to make it the database's
-- owner and to set its default privileges below.
GRANT :"migrator" TO CURRENT_USER;
CREATE ROLE :"service" LOGIN;
CREATE DATABASE :"database" OWNER :"migrator";
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"database" TO :"service";
\connect :"database"
-- The migrator owns the schema the tables go in (PostgreSQL 14 and older give public to the bootstrap
-- superuser), and nobody else may create in it (PostgreSQL 15 already keeps CREATE from everyone else).
ALTER SCHEMA public OWNER TO :"migrator";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"service";
-- Every table and sequence the migrator creates from now on is the service's to use, not to alter.
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"service";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT USAGE ON SEQUENCES TO :"service";
