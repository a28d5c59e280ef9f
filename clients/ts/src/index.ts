// Tessera's typed clients: the generated service and message definitions, the contracts' caller table,
// and an mTLS transport for Node. Make a client with Connect: createClient(HostService, mtlsTransport(...)).
export * from "./callers.js";
export * from "./identity.js";
export * from "./transport.js";
export { AgentService } from "../gen/tessera/agent/v1/agent_pb.js";
export { CapabilityBrokerService } from "../gen/tessera/capabilities/v1/capabilities_pb.js";
export { CompilerService } from "../gen/tessera/compiler/v1/compiler_pb.js";
export { HostService } from "../gen/tessera/host/v1/host_pb.js";
export { ResourceGatewayService } from "../gen/tessera/resources/v1/resources_pb.js";
