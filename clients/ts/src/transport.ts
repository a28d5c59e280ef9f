// A gRPC transport to one Tessera service over mutual TLS: the caller presents its own certificate (its
// principal), and trusts only the deployment's CA. Connect's Node transport speaks gRPC over HTTP/2.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

export interface MtlsOptions {
  /** host:port of the service. */
  address: string;
  /** The folder `tessera certs` wrote: ca.pem, and <principal>.pem / <principal>.key. */
  certDir: string;
  /** Whose certificate to present: "cli" for an operator's or a person's client. */
  principal: string;
}

export function mtlsTransport({ address, certDir, principal }: MtlsOptions): Transport {
  return createGrpcTransport({
    baseUrl: `https://${address}`,
    nodeOptions: {
      ca: readFileSync(join(certDir, "ca.pem")),
      cert: readFileSync(join(certDir, `${principal}.pem`)),
      key: readFileSync(join(certDir, `${principal}.key`)),
    },
  });
}
