"""A Node.js gRPC client (grpc-js + proto-loader) talks to a Tessera service."""

from __future__ import annotations

import json
import shutil
import subprocess

import grpc
import pytest

from shared.paths import REPO_ROOT

CLIENT = REPO_ROOT / "tests" / "polyglot" / "node_client.mjs"


def test_node_client_uses_the_contracts_over_mtls(running_set, cert_dir):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the polyglot client test needs Node.js")
    assert (REPO_ROOT / "node_modules" / "@grpc" / "grpc-js").exists(), "run 'make setup' (npm ci)"
    result = subprocess.run([node, str(CLIENT), running_set.handles["host"].address, str(cert_dir), "cli"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["health"]["reply"]["status"] == "SERVING"
    info = outcome["getInfo"]["reply"]["info"]
    assert info["name"] == "host" and info["identity"] == "spiffe://tessera.local/svc/host"
    # The CLI is not a declared caller of FreezeSlice: the same denial reaches Node.
    assert outcome["freezeSlice"]["code"] == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert "may not call" in outcome["freezeSlice"]["details"]
