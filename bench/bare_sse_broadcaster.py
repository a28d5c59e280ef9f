"""The baseline of the edge fan-out bench: a bare asyncio SSE broadcaster.

It watches web's surface stream as one viewer and writes every chunk it reads, as read, to each socket that
asked it for the stream: the same bytes to the same number of sockets as web, with nothing between a read and
the writes (no framework, no parsing, no per-viewer task). Prints its port on stdout once it listens.

    python bench/bare_sse_broadcaster.py <web host:port> <cookie name=value>
"""

from __future__ import annotations

import asyncio
import sys

RESPONSE_HEAD = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-store\r\n\r\n"


async def main(web: str, cookie: str) -> None:
    writers: list[asyncio.StreamWriter] = []

    async def viewer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(RESPONSE_HEAD)
        writers.append(writer)
        await reader.read()  # the viewer says nothing more: this returns when it leaves
        writers.remove(writer)
        writer.close()

    server = await asyncio.start_server(viewer, "127.0.0.1", 0, backlog=4096)
    host, port = web.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET /api/surface/stream HTTP/1.0\r\nHost: {web}\r\nCookie: {cookie}\r\n\r\n".encode())
    await reader.readuntil(b"\r\n\r\n")
    print(server.sockets[0].getsockname()[1], flush=True)
    while chunk := await reader.read(1 << 16):
        for each in writers:
            each.write(chunk)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
