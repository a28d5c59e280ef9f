"""docs/connect-your-warehouse.md run as written: every `sh` block in order, against a throwaway PostgreSQL database
of three related tables, with the variables the page names set; `tessera up` runs in the background until the
blocks after it are done. The answer is checked against SQL."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import threading

import pytest
import sqlalchemy as sa
import yaml

from shared.paths import REPO_ROOT
from tests.cli.integration.test_own_warehouse import STATUSES, _their_shop
from tests.fixtures.postgres import postgres_database

PAGE = REPO_ROOT / "docs" / "connect-your-warehouse.md"
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
UP_TIMEOUT_SECONDS = 180


def _blocks() -> list[str]:
    return BLOCK.findall(PAGE.read_text(encoding="utf-8"))


class _Up:
    """`tessera up` as the page runs it: in the background, read line by line until it says all services are up."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(["bash", "-c", command], cwd=REPO_ROOT, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.lines: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("all services up") or "all services started" in line:
                self.ready.set()
        self.ready.set()  # it ended: whoever waits stops waiting

    def stop(self) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C, as the page's reader stops it
        return self.process.wait(timeout=60)


def test_every_command_of_connect_your_warehouse_runs_and_the_answer_is_what_sql_gives(request, tmp_path):
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed: the page's first step runs it")
    blocks = _blocks()
    assert len(blocks) == 5 and any(b.lstrip().startswith("psql") for b in blocks)
    owner_url = postgres_database(request, "tessera_connect_docs")
    _their_shop(owner_url)
    url = sa.make_url(owner_url)
    reader, password = f"docs_reader_{secrets.token_hex(4)}", secrets.token_urlsafe(16)

    def drop_reader() -> None:  # roles are the cluster's: this one goes with the test
        engine = sa.create_engine(owner_url)
        with engine.begin() as connection:
            connection.exec_driver_sql(f'DROP OWNED BY "{reader}"')
            connection.exec_driver_sql(f'DROP ROLE IF EXISTS "{reader}"')
        engine.dispose()

    request.addfinalizer(drop_reader)
    env = {"PATH": f"{REPO_ROOT / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
           "TESSERA_VAR_DIR": str(tmp_path / "var"),
           "OWNER_URL": url.set(drivername="postgresql").render_as_string(hide_password=False),
           "READER": reader, "READER_PASSWORD": password,
           "WAREHOUSE_URL": url.set(username=reader, password=password).render_as_string(hide_password=False),
           "MODEL_FILE": str(tmp_path / "shop.yaml")}
    up = None
    outputs = []
    try:
        for block in blocks:
            if re.search(r"\btessera up\b", block):
                # The page's fixed ports (50051-50055) lie in the kernel's ephemeral range, which the other
                # worker's connections draw from; the page's reader has the machine to themselves.
                up = _Up(re.sub(r"\btessera up\b", "tessera up --ephemeral-ports", block), env)
                assert up.ready.wait(UP_TIMEOUT_SECONDS) and up.process.poll() is None, "".join(up.lines)
                continue
            ran = subprocess.run(["bash", "-c", block], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                                 timeout=300)
            assert ran.returncode == 0, f"{block}\n{ran.stdout}\n{ran.stderr}"
            outputs.append(ran.stdout)
    finally:
        if up is not None:
            assert up.stop() == 0, "".join(up.lines)
    answer = outputs[-1]  # tessera ask: the answer as the person's screen shows it
    engine = sa.create_engine(owner_url)
    with engine.connect() as connection:
        counts = dict(connection.exec_driver_sql("SELECT status, count(*) FROM orders GROUP BY status").all())
    engine.dispose()
    assert set(counts) == set(STATUSES)
    for status, count in counts.items():
        assert re.search(rf"^.*\b{status}\b.*\b{count}\b.*$", answer, re.MULTILINE), (status, count, answer)


YAML_BLOCK = re.compile(r"^```yaml\n# (deploy/k8s/overlays/[\w/.-]+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
KUBECTL = REPO_ROOT / ".venv-deploy" / "bin" / "kubectl"


def test_the_kubernetes_overlay_of_the_page_mounts_the_model_and_the_policy(tmp_path):
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: `make k8s-tools` installs kubectl")
    ((path, text),) = YAML_BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    shutil.copytree(REPO_ROOT / "deploy" / "k8s", tmp_path / "deploy" / "k8s")
    overlay = (tmp_path / path).parent
    overlay.mkdir(parents=True)
    (tmp_path / path).write_text(text)
    model = "version: 1  # the person's own model\n"
    (overlay / "shop.yaml").write_text(model)
    shutil.copy(REPO_ROOT / "deploy" / "policy" / "no-actions.yaml", overlay / "shop-actions.yaml")
    rendered = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    deployments = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    for service, setting, mount, file_name, content in (
            ("resources", "TESSERA_RESOURCES_SEMANTIC_MODEL", "/etc/tessera/semantic-model", "model.yaml", model),
            # The broker offers actions only for entities of the model the gateway reads: the same file.
            ("capabilities", "TESSERA_CAPABILITIES_SEMANTIC_MODEL", "/etc/tessera/semantic-model", "model.yaml",
             model),
            ("capabilities", "TESSERA_CAPABILITIES_ACTIONS_FILE", "/etc/tessera/actions", "actions.yaml",
             (overlay / "shop-actions.yaml").read_text())):
        spec = deployments[service]
        (container,) = spec["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env[setting] == f"{mount}/{file_name}"
        (mounted,) = [m for m in container["volumeMounts"] if m["mountPath"] == mount]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mounted["name"]]
        assert maps[volume["configMap"]["name"]]["data"] == {file_name: content}  # the overlay's own file
