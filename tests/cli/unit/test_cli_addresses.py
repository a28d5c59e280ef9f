"""Where the operator CLI finds a service: the address TESSERA_<SERVICE>_ADDR names (a deployment elsewhere, through
kubectl port-forward), ahead of the set `tessera up` runs here; an unusable address is named, not dialled."""

from __future__ import annotations

import io
from contextlib import redirect_stderr

from cli import main as cli_main


def test_a_named_address_is_used_with_the_cert_dir_and_no_running_set_is_needed(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_VAR_DIR", str(tmp_path / "var"))  # no `tessera up` state here
    monkeypatch.setenv("TESSERA_CERT_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("TESSERA_CAPABILITIES_ADDR", "127.0.0.1:50054")
    said = io.StringIO()
    with redirect_stderr(said):
        assert cli_main._running_address("capabilities") == ("127.0.0.1:50054", tmp_path / "keys")
    assert "capabilities at 127.0.0.1:50054 (TESSERA_CAPABILITIES_ADDR)" in said.getvalue()  # which target: said
    monkeypatch.delenv("TESSERA_CAPABILITIES_ADDR")
    said = io.StringIO()
    with redirect_stderr(said):
        assert cli_main._running_address("capabilities") is None
    assert "no running set" in said.getvalue()


def test_an_unusable_address_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("TESSERA_CAPABILITIES_ADDR", "capabilities")
    said = io.StringIO()
    with redirect_stderr(said):
        assert cli_main.main(["approvals", "list"]) == 1
    assert "TESSERA_CAPABILITIES_ADDR='capabilities': expected host:port" in said.getvalue()


def test_an_enrolment_link_for_a_deployment_elsewhere_needs_its_public_url(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("TESSERA_CAPABILITIES_ADDR", "127.0.0.1:50054")
    monkeypatch.delenv("TESSERA_PUBLIC_URL", raising=False)
    said = io.StringIO()
    with redirect_stderr(said):
        assert cli_main.main(["persons", "enroll", "ada@acme.test"]) == 2
    assert "set TESSERA_PUBLIC_URL (or --url)" in said.getvalue()
