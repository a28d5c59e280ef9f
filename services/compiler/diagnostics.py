"""Compiler findings as `tessera.common.v1.Diagnostic` (§4)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.rpc.next_steps import NEXT_STEPS
from tessera.common.v1 import common_pb2

_SEVERITY = {"error": common_pb2.SEVERITY_ERROR, "warning": common_pb2.SEVERITY_WARNING,
             "info": common_pb2.SEVERITY_INFO}


@dataclass(frozen=True)
class Finding:
    phase: str  # bounds, decode, envelope, patch, contract, binding, limits
    code: str  # dotted, stable
    message: str
    location: str = ""  # JSON Pointer into the proposal
    hint: str = ""
    severity: str = "error"
    recoverable: bool = True  # the element fails, the surface goes on
    model_correctable: bool = True

    def to_proto(self) -> common_pb2.Diagnostic:
        return common_pb2.Diagnostic(phase=self.phase, code=self.code, severity=_SEVERITY[self.severity],
                                     recoverable=self.recoverable, model_correctable=self.model_correctable,
                                     message=self.message, location=self.location,
                                     hint=self.hint or NEXT_STEPS.get(self.code, ""))


class Rejected(Exception):
    """The envelope is invalid: nothing compiles, the last good revision stays."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = Finding(**{**finding.__dict__, "recoverable": False})
