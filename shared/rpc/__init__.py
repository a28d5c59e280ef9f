"""How Tessera's processes talk: the gRPC runtime and interceptor, caller and field rules, channels, errors and
refusals."""
