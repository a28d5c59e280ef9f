"""Bad setup fails at startup with one line naming the setting, exit 2, no traceback."""

from __future__ import annotations

import shutil
import socket

import pytest

from tests.conftest import run_module


def _copy(cert_dir, tmp_path):
    target = tmp_path / "certs"
    shutil.copytree(cert_dir, target)
    return target


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def base_env(tmp_path):
    return {"TESSERA_VAR_DIR": str(tmp_path / "var"), "TESSERA_COMPILER_PORT": "0", "TESSERA_WEB_PORT": "0"}


def test_missing_certificate(base_env, tmp_path):
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(tmp_path / "nothing")})
    assert_one_line_error(result, "tessera-compiler: error:", "ca.pem", "does not exist")


def test_missing_key(base_env, cert_dir, tmp_path):
    certs = _copy(cert_dir, tmp_path)
    (certs / "compiler.key").unlink()
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(certs)})
    assert_one_line_error(result, "compiler.key", "does not exist")


def test_key_with_loose_permissions(base_env, cert_dir, tmp_path):
    certs = _copy(cert_dir, tmp_path)
    (certs / "compiler.key").chmod(0o644)
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(certs)})
    assert_one_line_error(result, "compiler.key", "0644", "chmod 600")


def test_unreadable_key(base_env, cert_dir, tmp_path):
    certs = _copy(cert_dir, tmp_path)
    (certs / "compiler.key").unlink()
    (certs / "compiler.key").mkdir(mode=0o700)
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(certs)})
    assert_one_line_error(result, "compiler.key", "cannot be read")


def test_certificate_from_another_ca(base_env, cert_dir, other_ca_dir):
    result = run_module("services.compiler", {
        **base_env, "TESSERA_CERT_DIR": str(cert_dir),
        "TESSERA_COMPILER_CERT": str(other_ca_dir / "compiler.pem"),
        "TESSERA_COMPILER_KEY": str(other_ca_dir / "compiler.key"),
    })
    assert_one_line_error(result, "other-ca", "compiler.pem", "not issued by the CA")


def test_key_that_does_not_match_the_certificate(base_env, cert_dir):
    result = run_module("services.compiler", {
        **base_env, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_COMPILER_KEY": str(cert_dir / "host.key"),
    })
    assert_one_line_error(result, "host.key", "does not match")


def test_another_services_certificate(base_env, cert_dir):
    # The host's valid certificate must not let a process serve as the compiler.
    result = run_module("services.compiler", {
        **base_env, "TESSERA_CERT_DIR": str(cert_dir),
        "TESSERA_COMPILER_CERT": str(cert_dir / "host.pem"), "TESSERA_COMPILER_KEY": str(cert_dir / "host.key"),
    })
    assert_one_line_error(result, "host.pem", "spiffe://tessera.local/svc/compiler")


def test_certificate_that_is_not_pem(base_env, cert_dir, tmp_path):
    certs = _copy(cert_dir, tmp_path)
    (certs / "compiler.pem").write_text("hello")
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(certs)})
    assert_one_line_error(result, "compiler.pem", "not a PEM certificate")


@pytest.mark.parametrize("variable,value", [
    ("TESSERA_COMPILER_PORT", "abc"),
    ("TESSERA_COMPILER_PORT", "70000"),
    ("TESSERA_LOG_LEVEL", "loud"),
    ("TESSERA_COMPILER_GRACE_SECONDS", "-1"),
    ("TESSERA_HOST_ADDR", "not-an-address"),
])
def test_bad_environment_value(base_env, cert_dir, variable, value):
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(cert_dir), variable: value})
    assert_one_line_error(result, f"{variable}={value!r}")


@pytest.mark.parametrize("service", ["compiler", "web"])
def test_port_in_use(base_env, cert_dir, service):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run_module(f"services.{service}", {
            **base_env, "TESSERA_CERT_DIR": str(cert_dir), f"TESSERA_{service.upper()}_PORT": str(port),
        })
    assert_one_line_error(result, f"TESSERA_{service.upper()}_PORT={port}", "cannot listen")


def test_resources_without_a_warehouse(base_env, cert_dir, tmp_path):
    result = run_module("services.resources", {
        **base_env, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_RESOURCES_PORT": "0",
        "TESSERA_RESOURCES_WAREHOUSE_URL": f"sqlite:///{tmp_path / 'absent.sqlite'}"})
    assert_one_line_error(result, "tessera-resources: error:", "absent.sqlite", "tessera seed")


def test_resources_with_a_broken_semantic_model(base_env, cert_dir, tmp_path, warehouse_url):
    from shared.paths import REPO_ROOT

    model = tmp_path / "model.yaml"
    text = (REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml").read_text()
    model.write_text(text.replace("table: returns", "table: refunds"))
    result = run_module("services.resources", {
        **base_env, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_RESOURCES_PORT": "0",
        "TESSERA_RESOURCES_WAREHOUSE_URL": warehouse_url, "TESSERA_RESOURCES_SEMANTIC_MODEL": str(model)})
    assert_one_line_error(result, str(model), "entities.returns.fields.return_id", "'refunds'")


def test_resources_with_a_bad_row_cap(base_env, cert_dir):
    result = run_module("services.resources", {**base_env, "TESSERA_CERT_DIR": str(cert_dir),
                                                "TESSERA_RESOURCES_ROW_CAP": "50000"})
    assert_one_line_error(result, "TESSERA_RESOURCES_ROW_CAP='50000'", "less than or equal to 20000")


def test_compiler_with_an_invalid_contract(base_env, cert_dir, tmp_path):
    import shutil

    from shared.ui.contracts import DEFAULT_CATALOG

    catalog = tmp_path / "catalog"
    shutil.copytree(DEFAULT_CATALOG, catalog)
    broken = catalog / "components" / "metric.yaml"
    broken.write_text(broken.read_text().replace("row: {type: integer", "row: {$ref: '#/x', type: integer"))
    result = run_module("services.compiler", {**base_env, "TESSERA_CERT_DIR": str(cert_dir),
                                               "TESSERA_COMPILER_CATALOG_DIR": str(catalog)})
    assert_one_line_error(result, "tessera-compiler: error: component contract", str(broken),
                          "props/properties/row/$ref")


def test_agent_with_model_parameters_it_cannot_send(base_env, cert_dir):
    value = '{"temperature": 0, "stream": false}'
    result = run_module("services.agent", {**base_env, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_AGENT_PORT": "0",
                                            "TESSERA_AGENT_MODEL_PARAMETERS": value})
    assert_one_line_error(result, "tessera-agent: error:", f"TESSERA_AGENT_MODEL_PARAMETERS={value!r}",
                          "stream: the openai-chat adapter writes these keys itself")
