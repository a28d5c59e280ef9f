"""`make bench`: writes bench/results.json.

The hop: the median latency of one authorized unary RPC (compiler GetInfo) as a Tessera client sees it (gRPC's
own TLS, the name derived from the peer's SPIFFE id) through the real service process (mTLS, contract caller
check, correlation ids, access log), against gRPC's own TLS client calling a bare grpc.aio server that answers
the same path with the same bytes over the same mTLS. Beside it, the SPIFFE bridge fallback against the native
client, same server. Every pair runs side by side in one run, in short batches in shuffled order, so machine
noise hits both alike.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.host import percentile
from cli.launcher import ServiceSet, cli_credentials
from shared.config import CLIENT_TLS_SPIFFE_BRIDGE
from shared.identity.certs import issue_deployment
from shared.paths import REPO_ROOT
from shared.rpc.channels import direct_sync_channel, sync_channel

METHOD = "/tessera.compiler.v1.CompilerService/GetInfo"
WARMUP_CALLS = 500
BATCHES = 200
CALLS_PER_BATCH = 40
GOAL_RATIO = 1.15


def _time_calls(call, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter_ns()
        call(b"", timeout=5)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def _side_by_side(calls: dict[str, object]) -> dict[str, list[float]]:
    """Warm every call, then time them in short batches, in a fresh random order each time."""
    for call in calls.values():
        _time_calls(call, WARMUP_CALLS)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffle = random.Random(42).shuffle
    for _ in range(BATCHES):
        shuffle(order)
        for name in order:
            samples[name].extend(_time_calls(calls[name], CALLS_PER_BATCH))
    return samples


def bench_hop(work: Path) -> list[dict]:
    cert_dir = work / "certs"
    issue_deployment(cert_dir)
    services = ServiceSet(cert_dir, work / "run", names=("compiler",), ephemeral_ports=True)
    services.start()
    bare = None
    try:
        credentials = cli_credentials(cert_dir)
        address = services.handles["compiler"].address
        with direct_sync_channel(address, credentials) as channel:
            real_response = channel.unary_unary(METHOD)(b"", timeout=5)
        bare = subprocess.Popen([sys.executable, str(REPO_ROOT / "bench" / "bare_echo_server.py"), str(cert_dir),
                                 METHOD, real_response.hex()], stdout=subprocess.PIPE, text=True)
        bare_port = int(bare.stdout.readline())
        with sync_channel(address, credentials, "compiler") as native, \
                sync_channel(address, credentials, "compiler", CLIENT_TLS_SPIFFE_BRIDGE) as bridged, \
                direct_sync_channel(f"127.0.0.1:{bare_port}", credentials) as bare_channel:
            assert bare_channel.unary_unary(METHOD)(b"", timeout=5) == real_response
            samples = _side_by_side({"tessera": native.unary_unary(METHOD), "bare": bare_channel.unary_unary(METHOD),
                                     "bridge": bridged.unary_unary(METHOD)})
    finally:
        if bare:
            bare.terminate()
            bare.wait(10)
        services.stop()
    tessera, bare_median, bridge = (statistics.median(samples[name]) for name in ("tessera", "bare", "bridge"))
    return [
        {"name": "hop_authorized_unary_rpc_median_latency", "value": round(tessera, 1), "unit": "us",
         "baseline": round(bare_median, 1), "ratio": round(tessera / bare_median, 3), "goal_ratio": GOAL_RATIO,
         "p99_us": round(percentile(samples["tessera"], 0.99), 1),
         "baseline_p99_us": round(percentile(samples["bare"], 0.99), 1),
         "samples": len(samples["tessera"]),
         "description": "compiler GetInfo as a Tessera client sees it (gRPC's own TLS expecting the name derived "
                        "from the compiler's SPIFFE id; the service's mTLS, caller check, correlation and access "
                        "log) vs gRPC's own TLS client to a bare grpc.aio server with the same mTLS and response "
                        "bytes; shuffled batches, one run"},
        {"name": "spiffe_bridge_fallback_unary_rpc_median_latency", "value": round(bridge, 1), "unit": "us",
         "baseline": round(tessera, 1), "ratio": round(bridge / tessera, 3), "samples": len(samples["bridge"]),
         "description": "the same call through the SPIFFE bridge (TESSERA_CLIENT_TLS=spiffe-bridge, for URI-only "
                        "certificates) vs the native client, same server, same batches"},
    ]


def main() -> int:
    from bench import asking, browser, compiler, data_plane, edge_fanout, fanout, host, image, recovery, tool_gate, tpch

    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as work:
        results = bench_hop(Path(work))
        data_dir = Path(work) / "data"
        data_dir.mkdir()
        results += compiler.run(Path(work), Path(work) / "certs")
        results += host.run(Path(work), Path(work) / "certs")
        results += fanout.run(Path(work), Path(work) / "certs")
        results += edge_fanout.run(Path(work), Path(work) / "certs")
        results += asking.run(Path(work), Path(work) / "certs")
        results += data_plane.run(data_dir, Path(work) / "certs")
        results += tpch.run(Path(work), Path(work) / "certs")
        results += tool_gate.run(Path(work), Path(work) / "certs")
        results += browser.run(Path(work), Path(work) / "certs")
        results += recovery.run(Path(work), Path(work) / "certs")
        results += image.run()
    out = REPO_ROOT / "bench" / "results.json"
    # `make model-check` writes its own entries (a 15-minute build): kept, not dropped, by a bench run.
    kept = [r for r in json.loads(out.read_text()) if r["name"].startswith("model_check_")] if out.exists() else []
    out.write_text(json.dumps(results + kept, indent=2) + "\n")
    for r in results:
        if r.get("value") is None:
            print(f"{r['name']}: skipped ({r.get('skipped', 'not measured')})")
            continue
        goal = f" (goal <= {r['goal_ratio']})" if "goal_ratio" in r else ""
        versus = f" vs {r['baseline']} {r['unit']} baseline, ratio {r['ratio']}" if r["baseline"] is not None else ""
        print(f"{r['name']}: {r['value']} {r['unit']}{versus}{goal}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
