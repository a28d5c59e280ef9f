"""Replica benchmarks side by side (bench/fanout.py, bench/asking.py): one replica, then two on one PostgreSQL
database, in one run; the CPU and memory of each process from /proc."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from cli.launcher import ServiceSet
from tests.fixtures.postgres import throwaway_database


def side_by_side(run_dir: Path, cert_dir: Path, names: tuple[str, ...], replicated: tuple[str, ...],
                 env_for: Callable[[str], dict[str, str]], measure: Callable[[list[ServiceSet]], list[dict]],
                 skip: Callable[[str], dict]) -> list[dict]:
    """`measure` with one replica of `replicated`, then again with a second one started next to it (reaching the
    first set's other services), on one PostgreSQL database; without PostgreSQL, one replica on SQLite and
    `skip(why)` for two. The second replica starts after the first: each host migrates at start-up."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with throwaway_database("tessera_bench") as (url, why):
        env = env_for(url or f"sqlite:///{run_dir / 'host.sqlite'}")
        sets = [ServiceSet(cert_dir, run_dir / "replica-1", names=names, ephemeral_ports=True, extra_env=env)]
        try:
            sets[0].start(timeout=120)
            results = measure(sets)
            if not url:
                return [*results, skip(why)]
            peers = {f"TESSERA_{n.upper()}_ADDR": h.address for n, h in sets[0].handles.items() if n not in replicated}
            sets.append(ServiceSet(cert_dir, run_dir / "replica-2", names=replicated, ephemeral_ports=True,
                                   extra_env={**env, **peers}))
            sets[1].start(timeout=120)
            return [*results, *measure(sets)]
        finally:
            stop_all(sets)


def stop_all(sets: list[ServiceSet]) -> None:
    for services in reversed(sets):
        services.stop()


def process_stats(pid: int) -> dict:
    """Resident and peak memory (MB) and CPU seconds used so far, from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {"rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
            "cpu_s": (int(stat[11]) + int(stat[12])) / ticks}


def skipped(name: str, unit: str, why: str) -> dict:
    return {"name": name, "value": None, "unit": unit, "baseline": None, "ratio": None, "skipped": why}
