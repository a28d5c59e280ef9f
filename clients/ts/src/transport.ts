// A gRPC transport to one Tessera service over mutual TLS: the caller presents its own certificate (its
// principal), and trusts only the deployment's CA. Connect's Node transport speaks gRPC over HTTP/2.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { type IdentityScheme, identityScheme, serverNameForSpiffe, spiffeIdFor } from "./identity.js";

export interface MtlsOptions {
  /** host:port of the service. */
  address: string;
  /** The folder `tessera certs` wrote: ca.pem, and <principal>.pem / <principal>.key. */
  certDir: string;
  /** Whose certificate to present: "cli" for an operator's or a person's client. */
  principal: string;
  /** The service dialled ("host", "agent" ...): its certificate must carry the DNS name derived from its SPIFFE
   * id, whatever the address. Without it, the address's own name is checked (localhost in a local set). */
  peer?: string;
  /** The deployment's identity scheme; by default from TESSERA_TRUST_DOMAIN, TESSERA_SPIFFE_PATH and
   * TESSERA_CLI_SPIFFE_PATH, as the services read it. */
  scheme?: IdentityScheme;
}

/** The DNS name a service's certificate carries beside its SPIFFE id: the id's path segments in reverse, then
 * its trust domain (spiffe://tessera.local/svc/host -> host.svc.tessera.local), as the Python clients expect. */
export function serverName(peer: string, scheme: IdentityScheme = identityScheme()): string {
  return serverNameForSpiffe(spiffeIdFor(peer, scheme));
}

export function mtlsTransport({ address, certDir, principal, peer, scheme }: MtlsOptions): Transport {
  return createGrpcTransport({
    baseUrl: `https://${address}`,
    nodeOptions: {
      ca: readFileSync(join(certDir, "ca.pem")),
      cert: readFileSync(join(certDir, `${principal}.pem`)),
      key: readFileSync(join(certDir, `${principal}.key`)),
      // Node checks the certificate against servername when it is set (and sends it as SNI).
      ...(peer === undefined ? {} : { servername: serverName(peer, scheme) }),
    },
  });
}
