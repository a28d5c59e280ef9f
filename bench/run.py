"""`make bench`: writes bench/results.json.

authz-interceptor latency: median latency of one unary RPC (compiler
GetInfo) through the real service process — mTLS, contract caller check,
correlation ids, access log — against a bare grpc.aio server answering the
same path with the same bytes over the same mTLS. Both run side by side in
one run, in interleaved rounds, so machine noise hits both alike.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cli.launcher import ServiceSet, cli_credentials
from shared.certs import issue_deployment
from shared.channels import direct_sync_channel, sync_channel
from shared.paths import REPO_ROOT

METHOD = "/tessera.compiler.v1.CompilerService/GetInfo"
WARMUP_CALLS = 500
ROUNDS = 20
CALLS_PER_ROUND = 250
GOAL_RATIO = 1.3


def _time_calls(call, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter_ns()
        call(b"", timeout=5)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def bench_authz(work: Path) -> dict:
    cert_dir = work / "certs"
    issue_deployment(cert_dir)
    services = ServiceSet(cert_dir, work / "run", names=("compiler",), ephemeral_ports=True)
    services.start()
    bare = None
    try:
        credentials = cli_credentials(cert_dir)
        with direct_sync_channel(services.handles["compiler"].address, credentials) as channel:
            real_response = channel.unary_unary(METHOD)(b"", timeout=5)
        bare = subprocess.Popen([sys.executable, str(REPO_ROOT / "bench" / "bare_echo_server.py"), str(cert_dir),
                                 METHOD, real_response.hex()], stdout=subprocess.PIPE, text=True)
        bare_port = int(bare.stdout.readline())
        # gRPC's own TLS client on both sides: this measures the server, not the client-side bridge.
        with direct_sync_channel(services.handles["compiler"].address, credentials) as tessera_channel, \
                direct_sync_channel(f"127.0.0.1:{bare_port}", credentials) as bare_channel:
            tessera_call = tessera_channel.unary_unary(METHOD)
            bare_call = bare_channel.unary_unary(METHOD)
            assert bare_call(b"", timeout=5) == real_response
            tessera_samples, bare_samples = _interleaved(tessera_call, bare_call)
    finally:
        if bare:
            bare.terminate()
            bare.wait(10)
        services.stop()
    tessera_median = statistics.median(tessera_samples)
    bare_median = statistics.median(bare_samples)
    return {
        "name": "authz_interceptor_unary_rpc_median_latency",
        "value": round(tessera_median, 1),
        "unit": "us",
        "baseline": round(bare_median, 1),
        "ratio": round(tessera_median / bare_median, 3),
        "goal_ratio": GOAL_RATIO,
        "samples": len(tessera_samples),
        "description": "compiler GetInfo through the Tessera runtime (mTLS + caller check + access log) "
                       "vs a bare grpc.aio server with the same mTLS and response bytes",
    }


def _interleaved(first, second) -> tuple[list[float], list[float]]:
    """Warm both, then time them in alternating rounds so that machine noise hits both alike."""
    _time_calls(first, WARMUP_CALLS)
    _time_calls(second, WARMUP_CALLS)
    first_samples, second_samples = [], []
    for round_number in range(ROUNDS):
        order = [(first, first_samples), (second, second_samples)]
        for call, samples in (order if round_number % 2 == 0 else order[::-1]):
            samples.extend(_time_calls(call, CALLS_PER_ROUND))
    return first_samples, second_samples


def bench_spiffe_bridge(work: Path) -> dict:
    """A client that authenticates the server's SPIFFE id (through the in-process bridge) against gRPC's
    own TLS client (DNS/IP name check), to the same Tessera compiler process, side by side."""
    cert_dir = work / "certs-bridge"
    issue_deployment(cert_dir)
    services = ServiceSet(cert_dir, work / "run-bridge", names=("compiler",), ephemeral_ports=True)
    services.start()
    try:
        credentials = cli_credentials(cert_dir)
        address = services.handles["compiler"].address
        with sync_channel(address, credentials, "compiler") as bridged, \
                direct_sync_channel(address, credentials) as direct:
            bridged_samples, direct_samples = _interleaved(bridged.unary_unary(METHOD), direct.unary_unary(METHOD))
    finally:
        services.stop()
    bridged_median, direct_median = statistics.median(bridged_samples), statistics.median(direct_samples)
    return {
        "name": "spiffe_bridge_unary_rpc_median_latency",
        "value": round(bridged_median, 1), "unit": "us", "baseline": round(direct_median, 1),
        "ratio": round(bridged_median / direct_median, 3), "samples": len(bridged_samples),
        "description": "compiler GetInfo from a client that authenticates the server's SPIFFE id through the "
                       "in-process bridge vs gRPC's own TLS client (DNS/IP name check), same server, same run",
    }


def main() -> int:
    from bench import asking, browser, compiler, data_plane, fanout, host, image, recovery, tool_gate

    with tempfile.TemporaryDirectory(prefix="tessera-bench-") as work:
        results = [bench_authz(Path(work)), bench_spiffe_bridge(Path(work))]
        data_dir = Path(work) / "data"
        data_dir.mkdir()
        results += compiler.run(Path(work), Path(work) / "certs")
        results += host.run(Path(work), Path(work) / "certs")
        results += fanout.run(Path(work), Path(work) / "certs")
        results += asking.run(Path(work), Path(work) / "certs")
        results += data_plane.run(data_dir, Path(work) / "certs")
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
