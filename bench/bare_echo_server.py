"""Baseline for the authz benchmark: a bare grpc.aio server with the same mTLS.

It answers the same method path with the same response bytes as the real
service, but with no interceptor, no health, no logging. Prints its port.
Usage: python bench/bare_echo_server.py <cert-dir> <method-path> <response-hex>
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import grpc


async def main(cert_dir: Path, method_path: str, response: bytes) -> None:
    service, method = method_path.strip("/").split("/")

    async def answer(request: bytes, context) -> bytes:
        return response

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service, {
        method: grpc.unary_unary_rpc_method_handler(answer),
    })])
    credentials = grpc.ssl_server_credentials(
        [((cert_dir / "compiler.key").read_bytes(), (cert_dir / "compiler.pem").read_bytes())],
        root_certificates=(cert_dir / "ca.pem").read_bytes(), require_client_auth=True,
    )
    port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    print(port, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], bytes.fromhex(sys.argv[3])))
