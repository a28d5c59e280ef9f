// A Node.js client built only from Tessera's .proto files: proof that the
// contracts serve clients in other languages. Prints one JSON line.
//
// Usage: node node_client.mjs <host:port> <cert-dir> <principal>
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const [address, certDir, principal] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const protoRoot = join(here, "..", "..", "proto");

const definition = protoLoader.loadSync(
  ["tessera/host/v1/host.proto", join(here, "health.proto")],
  { includeDirs: [protoRoot, here], keepCase: true, longs: String, enums: String, defaults: true },
);
const loaded = grpc.loadPackageDefinition(definition);
const credentials = grpc.credentials.createSsl(
  readFileSync(join(certDir, "ca.pem")),
  readFileSync(join(certDir, `${principal}.key`)),
  readFileSync(join(certDir, `${principal}.pem`)),
);

const health = new loaded.grpc.health.v1.Health(address, credentials);
const host = new loaded.tessera.host.v1.HostService(address, credentials);
const deadline = () => new Date(Date.now() + 10000);
const call = (client, method, request) =>
  new Promise((resolve) =>
    client[method](request, { deadline: deadline() }, (error, reply) =>
      resolve(error ? { code: error.code, details: error.details } : { reply }),
    ),
  );

const result = {
  health: await call(health, "Check", { service: "" }),
  getInfo: await call(host, "GetInfo", {}),
  freezeSlice: await call(host, "FreezeSlice", {}),
};
console.log(JSON.stringify(result));
health.close();
host.close();
