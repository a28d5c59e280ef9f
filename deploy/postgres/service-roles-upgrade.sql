-- Moves an existing service database, whose service role owns the tables (the service migrated itself), to a
-- migrator that owns them and a service role without DDL: what service-roles.sql makes for a new database.
-- Run once, as a superuser or the managed server's administrator, before switching the service to
-- TESSERA_<SERVICE>_MIGRATIONS=await, for example:
--   psql -v service=tessera_host -v migrator=tessera_host_migrator -v database=tessera_host \
--        -f deploy/postgres/service-roles-upgrade.sql
\set ON_ERROR_STOP on
CREATE ROLE :"migrator" LOGIN;
GRANT :"migrator" TO CURRENT_USER;
GRANT :"service" TO CURRENT_USER;  -- REASSIGN OWNED needs both roles' privileges
ALTER DATABASE :"database" OWNER TO :"migrator";
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"database" TO :"service";
\connect :"database"
REASSIGN OWNED BY :"service" TO :"migrator";
REVOKE :"service" FROM CURRENT_USER;
ALTER SCHEMA public OWNER TO :"migrator";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"service";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"service";
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO :"service";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"service";
ALTER DEFAULT PRIVILEGES FOR ROLE :"migrator" IN SCHEMA public
    GRANT USAGE ON SEQUENCES TO :"service";
