-- One service's PostgreSQL database with two roles: the migrator owns the schema and alone may change it (the
-- migrate Job connects as it); the service's own role may read and write every table the migrations make, and
-- create nothing (the service runs with TESSERA_<SERVICE>_MIGRATIONS=await).
--
-- Once per stateful service (host, capabilities, resources' result store), as a superuser (on managed
-- PostgreSQL, the administrator role, made a member of the migrator role once it exists), for example:
--   psql -v service=tessera_host -v migrator=tessera_host_migrator -v database=tessera_host \
--        -f deploy/postgres/service-roles.sql
-- then give both roles passwords with psql's \password (never in a file or on a command line), and put the
-- URLs in the Secrets: the migrator's in migrate-<service> (tessera_<service>_migrator_url), the service's in
-- <service>-identity (docs/deploy-kubernetes.md, "Migrations").
\set ON_ERROR_STOP on
CREATE ROLE :"migrator" LOGIN;
CREATE ROLE :"service" LOGIN;
CREATE DATABASE :"database" OWNER :"migrator";
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"database" TO :"service", :"migrator";
\connect :"database"
-- PostgreSQL 15 already keeps CREATE on public from everyone but the database owner; older servers do not.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"service";
-- Every table and sequence the migrator creates from now on is the service's to use, not to alter.
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"service";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO :"service";
