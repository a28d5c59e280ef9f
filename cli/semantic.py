"""`tessera semantic`: a semantic model drafted from a live database (`init`), checked as the Resource Gateway
would load it (`check`), or imported from dbt (`import dbt`)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from cli import semantic_import, semantic_init


def add_parser(sub) -> argparse.ArgumentParser:
    semantic = sub.add_parser("semantic", help="draft, check or import a semantic model")
    actions = semantic.add_subparsers(dest="action", required=True)
    semantic_init.add_parser(actions)
    checking = actions.add_parser("check", help="check a semantic model as the gateway loads it, and print what a "
                                                "model would be shown")
    checking.add_argument("file", help="the semantic model (YAML)")
    checking.add_argument("--warehouse", metavar="URL",
                          help="also bind it to this warehouse: every mapped table and column must be there "
                               f"(default: ${semantic_init.DATABASE_URL_VARIABLE}, when set)")
    semantic_import.add_parser(actions)
    return semantic


def run(args: argparse.Namespace) -> int:
    if args.action == "init":
        return semantic_init.run(args)
    if args.action == "check":
        return check(args)
    return semantic_import.run(args)


def check(args: argparse.Namespace) -> int:
    """The gateway's own loader, run as a process (the CLI never imports a service): its output and status."""
    env = dict(os.environ)
    url = semantic_init.database_url(args.warehouse)
    if url:  # to the child in its environment, never its arguments: a process listing shows those
        env[semantic_init.DATABASE_URL_VARIABLE] = url
    command = [sys.executable, "-m", "services.resources.model_check", args.file]
    return subprocess.run(command, check=False, env=env).returncode
