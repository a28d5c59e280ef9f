"""`tessera semantic`: a semantic model drafted from a live database (`init`), checked as the Resource Gateway
would load it (`check`), or imported from dbt (`import dbt`)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from cli import semantic_init
from shared.config import WAREHOUSE_URL_VARIABLE


def add_parser(sub) -> argparse.ArgumentParser:
    semantic = sub.add_parser("semantic", help="draft, check or import a semantic model")
    actions = semantic.add_subparsers(dest="action", required=True)
    semantic_init.add_parser(actions)
    checking = actions.add_parser("check", help="check a semantic model as the gateway loads it, and print what a "
                                                "model would be shown")
    checking.add_argument("file", help="the semantic model (YAML)")
    checking.add_argument("--warehouse", metavar="URL",
                          help="also bind it to this warehouse: every mapped table and column must be there "
                               f"(default: ${WAREHOUSE_URL_VARIABLE}, when set)")
    importing = actions.add_parser("import", help="convert a semantic layer (every field never-to-model)")
    sources = importing.add_subparsers(dest="source", required=True)
    dbt = sources.add_parser("dbt", help="a dbt project's MetricFlow semantic models and metrics")
    dbt.add_argument("path", help="the dbt project (or a folder or file of it); YAML is read recursively")
    dbt.add_argument("--out", metavar="FILE", help="write the model to this file instead of standard output")
    dbt.add_argument("--dataset-label", metavar="TEXT", help="the dataset's label (default: the dbt project's name)")
    return semantic


def run(args: argparse.Namespace) -> int:
    if args.action == "init":
        return semantic_init.run(args)
    if args.action == "check":
        return check(args)
    from cli import semantic_import  # dbt's library takes a noticeable time to load: only for the import

    return semantic_import.run(args)


def check(args: argparse.Namespace) -> int:
    """The gateway's own loader, run as a process (the CLI never imports a service): its output and status."""
    env = dict(os.environ)
    if args.warehouse:  # to the child in its environment, never its arguments: a process listing shows those
        env[WAREHOUSE_URL_VARIABLE] = args.warehouse
    command = [sys.executable, "-m", "services.resources.model_check", args.file]
    return subprocess.run(command, check=False, env=env).returncode
