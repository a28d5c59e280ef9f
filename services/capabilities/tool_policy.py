"""The tool policy (deploy/policy/tools.yaml, §8): allowlisted MCP servers and tools, our classification,
our reviewed description, and the pinned hashes of the server's description and input schema.

The pins are SHA-256 over canonical JSON of the server's description (a JSON
string) and of its input schema. `tessera policy pin` rewrites a tool's `pin`
block after a person reviewed the change; everything else is written by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from services.capabilities.policy import Approvers, load_policy_file, summary_problem
from services.capabilities.sandbox import Box
from shared.data.bounded_json import canonical
from shared.paths import REPO_ROOT, var_dir
from shared.tools.tool_contracts import function_name

_NAME = r"^[a-z][a-z0-9_]*$"


def digest(value: object) -> str:
    """SHA-256 of a JSON value's canonical form: how descriptions and schemas are pinned."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()


def _digest_before_rfc8785(value: object) -> str:
    """The digest pins written before canonical() followed RFC 8785 carry (sorted-key json.dumps: `100.0`
    stayed `100.0`). Read, never written: an upgrade must not turn a pinned float into drift or a broker
    that refuses its own policy file. Both forms are deterministic, so either names one schema."""
    legacy = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(legacy.encode()).hexdigest()


def pinned_as(value: object, pinned_sha256: str) -> bool:
    """Whether `value` is what a pin's hash names, in the current or the pre-RFC 8785 canonical form."""
    return digest(value) == pinned_sha256 or _digest_before_rfc8785(value) == pinned_sha256


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pin(_Strict):
    description_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    input_schema_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    # What was reviewed, kept so a drift can be shown side by side.
    description: str
    input_schema: dict
    # Who accepted this description and schema, and when (`tessera policy pin` writes both).
    reviewed_by: str = Field(min_length=1, max_length=200)
    reviewed_at: AwareDatetime

    @model_validator(mode="after")
    def _hashes_match_the_snapshot(self) -> Pin:
        if not pinned_as(self.description, self.description_sha256) or \
                not pinned_as(self.input_schema, self.input_schema_sha256):
            raise ValueError("the pinned hashes do not match the pinned description and schema")
        return self


class ToolRule(Approvers):
    risk: Literal["read", "mutate"]
    description: str = Field(min_length=1, max_length=1000)  # ours: the only text a model sees
    # What a call does, in words, for the approval card: {name}s of the pinned schema's properties.
    summary: str = Field(default="", max_length=200)
    pin: Pin | None = None  # unpinned: listed but denied until reviewed
    # Who may approve a call (approvers, operator_tenants): see policy.Approvers.

    @model_validator(mode="after")
    def _summary_fits_the_schema(self) -> ToolRule:
        problem = summary_problem(self.summary, self.pin.input_schema if self.pin else {"properties": {}})
        if problem:
            raise ValueError(f"summary: {problem}")
        return self


CREDENTIAL_PREFIX = "TESSERA_CAPABILITIES_"


class SandboxRule(_Strict):
    """What a stdio server's box holds besides the system (services/capabilities/sandbox.py). Paths are
    absolute or start with {repo} or {var}, filled in like commands."""

    # Read-only paths the server needs to run (its code, a repository it reads). The broker's interpreter
    # is bound for a {python} command. None may lie in the var folder or a folder of keys, and those stay
    # covered wherever a path here holds them.
    read: list[str] = Field(default_factory=list, max_length=64)
    # Its one writable folder (created 0700; also its working directory). None: only a private /tmp.
    data: str | None = None
    # Hosts it may reach. Boxed stdio servers get no network at all (no filtering path is offered here),
    # so this must stay empty: a server that needs hosts runs as a streamable-HTTP server where egress can
    # be filtered (on Kubernetes, its own pod with a NetworkPolicy).
    network: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _no_network(self) -> SandboxRule:
        if self.network:
            raise ValueError("network: a boxed stdio server has no network at all; run a server that needs "
                             f"{', '.join(self.network)} as a streamable-HTTP server (transport: http) instead")
        for path in [*self.read, *([self.data] if self.data else [])]:
            if not path.startswith(("/", "{repo}", "{var}")) or ".." in Path(path).parts:
                raise ValueError(f"sandbox path {path!r} must be absolute or start with {{repo}} or {{var}}, "
                                 "without '..'")
        return self


class ServerRule(_Strict):
    transport: Literal["stdio", "http"]
    command: list[str] = Field(default_factory=list)  # stdio; {python}, {repo}, {var} are filled in
    url: str = ""  # http (streamable HTTP)
    env: dict[str, str] = Field(default_factory=dict)  # fixed settings for the server process
    # Credentials, per server: server env var / HTTP header ← the broker's environment variable holding it,
    # always one of its own (TESSERA_CAPABILITIES_*): the only variables a launcher or a pod hands the broker.
    credential_env: dict[str, str] = Field(default_factory=dict)
    credential_headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=10, gt=0, le=120)
    # A stdio server always runs boxed (what its box holds besides the system: SandboxRule) unless this
    # says `none`, which runs it unconfined as the broker's own user; status and the audit show that.
    sandbox: SandboxRule | Literal["none"] = Field(default_factory=SandboxRule)
    tools: dict[str, ToolRule] = Field(min_length=1)

    @model_validator(mode="after")
    def _transport_is_complete(self) -> ServerRule:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.transport == "http" and "sandbox" in self.model_fields_set:
            raise ValueError("sandbox: the broker does not start an http server; box it where it runs")
        if self.transport == "http" and not self.url.startswith(("http://", "https://")):
            raise ValueError("an http server needs an http(s) url")
        for source in [*self.credential_env.values(), *self.credential_headers.values()]:
            if not source.startswith(CREDENTIAL_PREFIX):
                raise ValueError(f"credential variable {source!r} must be one of the broker's own "
                                 f"({CREDENTIAL_PREFIX}...)")
        return self


class ToolPolicyFile(_Strict):
    version: Literal[1]
    servers: dict[str, ServerRule] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names(self) -> ToolPolicyFile:
        for server, rule in self.servers.items():
            for name in [server, *rule.tools]:
                if not re.match(_NAME, name):
                    raise ValueError(f"{name!r}: server and tool names are lower_snake_case")
        # A model calls `server.tool` as the function `server__tool`: two ids that map to one name (x.y__z and
        # x__y.z) would make one tool answer for the other.
        by_function: dict[str, str] = {}
        for server, rule in self.servers.items():
            for tool in rule.tools:
                tool_id = f"{server}.{tool}"
                other = by_function.setdefault(function_name(tool_id), tool_id)
                if other != tool_id:
                    raise ValueError(f"{other!r} and {tool_id!r} are both called {function_name(tool_id)!r} by a "
                                     "model; rename one")
        return self


def _fill(text: str) -> str:
    return text.replace("{python}", sys.executable).replace("{repo}", str(REPO_ROOT)).replace(
        "{var}", str(var_dir()))


class ToolPolicy:
    def __init__(self, policy: ToolPolicyFile, digest_hex: str, path: Path) -> None:
        self.policy = policy
        self.digest = digest_hex
        self.path = path

    @classmethod
    def load(cls, path: Path) -> ToolPolicy:
        policy, digest_hex = load_policy_file(path, ToolPolicyFile, "tool policy")
        return cls(policy, digest_hex, path)

    def rule(self, tool_id: str) -> tuple[str, ServerRule, str, ToolRule] | None:
        server, _, tool = tool_id.partition(".")
        found = self.policy.servers.get(server)
        if found is None or tool not in found.tools:
            return None
        return server, found, tool, found.tools[tool]

    @staticmethod
    def command(rule: ServerRule) -> list[str]:
        return [_fill(part) for part in rule.command]

    @staticmethod
    def server_env(rule: ServerRule) -> dict[str, str]:
        """Fixed settings plus this server's own credentials, taken from the broker's environment."""
        env = {name: _fill(value) for name, value in rule.env.items()}
        env.update({name: os.environ.get(source, "") for name, source in rule.credential_env.items()})
        return env

    @staticmethod
    def box(rule: ServerRule) -> Box:
        """A boxed server's box with its paths filled in (rule.sandbox is not `none`)."""
        sandbox = rule.sandbox
        if not isinstance(sandbox, SandboxRule):
            raise ValueError(f"{rule.command[:1]} runs unboxed (sandbox: none)")
        return Box(tuple(Path(_fill(path)) for path in sandbox.read),
                   Path(_fill(sandbox.data)) if sandbox.data else None)

    @staticmethod
    def headers(rule: ServerRule) -> dict[str, str]:
        return {name: os.environ.get(source, "") for name, source in rule.credential_headers.items()}
