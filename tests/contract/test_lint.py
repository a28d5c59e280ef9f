"""The contracts are buf-lint clean and services never import each other."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from shared.paths import REPO_ROOT


def test_buf_lint_is_clean():
    buf = REPO_ROOT / "node_modules" / ".bin" / "buf"
    assert buf.exists(), "buf is missing: run 'make setup' (npm ci)"
    result = subprocess.run([str(buf), "lint"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists() or shutil.which("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_ruff_is_clean():
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run([str(ruff), "check", "."], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
