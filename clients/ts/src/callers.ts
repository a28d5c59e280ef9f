// Who may call what, read from the contracts themselves: every RPC declares its callers with the
// (tessera.authz.v1.callers) option, and protoc-gen-es keeps options in the generated descriptors. The
// services enforce the same declarations (shared/rpc/authz.py), so a client can see before calling whether
// its principal will be refused with PERMISSION_DENIED.
import type { DescService } from "@bufbuild/protobuf";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { AgentService } from "../gen/tessera/agent/v1/agent_pb.js";
import { callers, PrincipalSchema } from "../gen/tessera/authz/v1/authz_pb.js";
import { CapabilityBrokerService } from "../gen/tessera/capabilities/v1/capabilities_pb.js";
import { CompilerService } from "../gen/tessera/compiler/v1/compiler_pb.js";
import { HostService } from "../gen/tessera/host/v1/host_pb.js";
import { ResourceGatewayService } from "../gen/tessera/resources/v1/resources_pb.js";
import { type IdentityScheme, identityScheme, spiffeIdFor } from "./identity.js";

export const SERVICES: readonly DescService[] = [
  AgentService, CapabilityBrokerService, CompilerService, HostService, ResourceGatewayService,
];

/** A principal as the contracts name it: "cli" for PRINCIPAL_CLI, with its SPIFFE id under the deployment's
 * identity scheme. */
export interface Principal {
  name: string;
  spiffeId: string;
}

function principal(number: number, scheme: IdentityScheme): Principal {
  const value = PrincipalSchema.values.find((v) => v.number === number);
  if (value === undefined) throw new Error(`unknown principal number ${number}`);
  const name = value.name.replace(/^PRINCIPAL_/, "").toLowerCase();
  return { name, spiffeId: spiffeIdFor(name, scheme) };
}

/** Full method path ("/tessera.host.v1.HostService/OpenSession") → the principals allowed to call it. An RPC
 * without a declaration has none: the services deny it to everyone. */
export function callerTable(services: readonly DescService[] = SERVICES,
                            scheme: IdentityScheme = identityScheme()): Map<string, Principal[]> {
  const table = new Map<string, Principal[]>();
  for (const service of services) {
    for (const method of service.methods) {
      const declared = hasOption(method, callers) ? getOption(method, callers).allow : [];
      table.set(`/${service.typeName}/${method.name}`, declared.filter((n) => n !== 0).map((n) => principal(n, scheme)));
    }
  }
  return table;
}

let declared: Map<string, Principal[]> | undefined;  // the contracts' table, read once

/** Whether `principal` (e.g. "cli") may call the method at `path` by the contracts' declarations. */
export function mayCall(principalName: string, path: string): boolean {
  declared ??= callerTable();
  return (declared.get(path) ?? []).some((p) => p.name === principalName);
}
