// Which SPIFFE id names which principal: the deployment's configuration, not the contract's (the issuer decides
// the trust domain and path scheme). The same three settings, defaults and checks as shared/identity/principals.py, so a
// Node client and the services agree on who is who.
import { PrincipalSchema } from "../gen/tessera/authz/v1/authz_pb.js";

export interface IdentityScheme {
  /** TESSERA_TRUST_DOMAIN: e.g. "tessera.local" (the default) or "example.org". */
  trustDomain: string;
  /** TESSERA_SPIFFE_PATH: each workload's path, holding {principal} once (default "/svc/{principal}"). */
  path: string;
  /** TESSERA_CLI_SPIFFE_PATH: the operator CLI's path (default "/user-agent/cli"). */
  cliPath: string;
}

const PLACEHOLDER = "{principal}";
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Principal names in contract order: "agent", ..., "cli", "mcp". */
export const PRINCIPAL_NAMES: readonly string[] = PrincipalSchema.values
  .filter((v) => v.number !== 0)
  .map((v) => v.name.replace(/^PRINCIPAL_/, "").toLowerCase());

/** The scheme from the environment, as the services read it (unset or empty: the default). */
export function identityScheme(env: Record<string, string | undefined> = process.env): IdentityScheme {
  return checkScheme({
    trustDomain: env.TESSERA_TRUST_DOMAIN || "tessera.local",
    path: env.TESSERA_SPIFFE_PATH || "/svc/{principal}",
    cliPath: env.TESSERA_CLI_SPIFFE_PATH || "/user-agent/cli",
  });
}

function idFor(name: string, scheme: IdentityScheme): string {
  return `spiffe://${scheme.trustDomain}${name === "cli" ? scheme.cliPath : scheme.path.replace(PLACEHOLDER, name)}`;
}

/** The DNS name a certificate carries beside SPIFFE id `id`: its path segments in reverse, then its trust domain
 * (spiffe://tessera.local/svc/host -> host.svc.tessera.local). */
export function serverNameForSpiffe(id: string): string {
  const [trustDomain, ...path] = id.replace(/^spiffe:\/\//, "").split("/");
  const labels = [...path.reverse(), ...trustDomain.split(".")];
  if (!id.startsWith("spiffe://") || !labels.every((l) => DNS_LABEL.test(l))) {
    throw new Error(`SPIFFE id ${JSON.stringify(id)} has no DNS form: its trust domain and path segments must be `
      + "lower-case DNS labels");
  }
  return labels.join(".");
}

/** Throw, naming the setting, unless every principal gets its own id with a DNS form. */
export function checkScheme(scheme: IdentityScheme): IdentityScheme {
  if (!scheme.trustDomain.split(".").every((l) => DNS_LABEL.test(l))) {
    throw new Error(`TESSERA_TRUST_DOMAIN=${JSON.stringify(scheme.trustDomain)}: expected a lower-case DNS name`);
  }
  if (!scheme.path.startsWith("/") || scheme.path.split(PLACEHOLDER).length !== 2
      || scheme.path.replace(PLACEHOLDER, "").includes("{")) {
    throw new Error(`TESSERA_SPIFFE_PATH=${JSON.stringify(scheme.path)}: expected a path starting with / holding `
      + `${PLACEHOLDER} once`);
  }
  if (!scheme.cliPath.startsWith("/") || scheme.cliPath.includes("{")) {
    throw new Error(`TESSERA_CLI_SPIFFE_PATH=${JSON.stringify(scheme.cliPath)}: expected a path starting with /`);
  }
  PRINCIPAL_NAMES.map((name) => idFor(name, scheme)).forEach(serverNameForSpiffe);
  // The operator's id must not have a workload's form: a workload of that name would hold it.
  const escaped = scheme.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const workload = new RegExp(`^${escaped.replace("\\{principal\\}", DNS_LABEL.source.slice(1, -1))}$`);
  if (workload.test(scheme.cliPath)) {
    throw new Error(`TESSERA_CLI_SPIFFE_PATH=${JSON.stringify(scheme.cliPath)} has the workloads' form `
      + `(TESSERA_SPIFFE_PATH=${JSON.stringify(scheme.path)}): a workload of that name would hold the operator CLI's `
      + "SPIFFE id");
  }
  return scheme;
}

/** The SPIFFE id `principal` ("host", "cli" ...) carries under `scheme`. */
export function spiffeIdFor(principal: string, scheme: IdentityScheme = identityScheme()): string {
  if (!PRINCIPAL_NAMES.includes(principal)) {
    throw new Error(`unknown principal ${JSON.stringify(principal)}; known: ${PRINCIPAL_NAMES.join(", ")}`);
  }
  return idFor(principal, scheme);
}
