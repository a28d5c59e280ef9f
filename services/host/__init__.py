"""HostServer: canonical state and the trusted surface stream."""
