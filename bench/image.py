"""The container image's size (make image), against the base it is built on, measured now with podman."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from shared.paths import REPO_ROOT

CONTAINERS_CONF = REPO_ROOT / "deploy" / "image" / "containers.conf"
IMAGES = {"tessera": ("localhost/tessera:0.1.0", "localhost/tessera-base:bookworm"),
          "tessera-postgres": ("localhost/tessera-postgres:15", "localhost/tessera-postgres-base:bookworm")}


def _size(image: str) -> int | None:
    result = subprocess.run(["podman", "image", "inspect", "--format", "{{.Size}}", image], capture_output=True,
                            text=True, env={**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}, timeout=60)
    return int(result.stdout.strip()) if result.returncode == 0 else None


def run() -> list[dict]:
    results = []
    for name, (image, base) in IMAGES.items():
        entry = {"name": f"container_image_size_{name.replace('-', '_')}", "unit": "MB",
                 "description": f"{image} as built by `make image`, against its mmdebstrap base {base}"}
        size = _size(image) if shutil.which("podman") else None
        base_size = _size(base) if size else None
        if size is None or base_size is None:
            results.append({**entry, "value": None, "baseline": None,
                            "skipped": "podman or the images are missing: run `make image` first"})
            continue
        results.append({**entry, "value": round(size / 1e6, 1), "baseline": round(base_size / 1e6, 1),
                        "ratio": round(size / base_size, 3)})
    smoke = REPO_ROOT / "var" / "k8s-smoke.json"
    if smoke.exists():
        timing = json.loads(smoke.read_text())
        results.append({"name": "k8s_smoke_wall_time", "value": timing["wall_seconds"], "unit": "s",
                        "baseline": None, "description": "make k8s-smoke's last run: podman kube play of "
                        f"overlays/local, every pod ready after {timing['ready_seconds']} s, question, teardown"})
    return results
