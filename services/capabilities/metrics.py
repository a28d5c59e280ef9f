"""Broker metrics (§8) for Prometheus: approvals requested/approved/rejected/expired, time to decision,
tool drift."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()  # ours only: no process-global collectors
        self.requested = Counter("tessera_approvals_requested", "Approval requests created",
                                 registry=self.registry)
        self._decisions = Counter("tessera_approvals_decided", "Approval requests decided, by outcome",
                                  ["outcome"], registry=self.registry)
        self._time_to_decision = Histogram(
            "tessera_approval_time_to_decision_seconds", "From request to decision (or expiry)",
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 900), registry=self.registry)
        self.drift = Counter("tessera_tool_drift", "Tools whose description or schema changed since review",
                             ["tool"], registry=self.registry)

    def decided(self, outcome: str, seconds: float) -> None:
        """outcome: approved | rejected | expired."""
        self._decisions.labels(outcome).inc()
        self._time_to_decision.observe(max(0.0, seconds))

    def serve(self, host: str, port: int):
        """Expose /metrics over HTTP on its own thread; returns (server, thread) to shut down."""
        return start_http_server(port, addr=host, registry=self.registry)
