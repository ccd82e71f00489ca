#!/usr/bin/env python3
"""A TCP proxy that holds every chunk it forwards for a fixed delay in each direction, so that
workers on 127.0.0.1 see a coordinator as far away as one on another host (a round trip of
twice the delay, plus loopback's own). Order within a connection is kept; nothing is dropped.

usage: scripts/latency-proxy.py LISTEN_PORT TARGET_PORT DELAY_MS
"""

import asyncio
import sys
import time


async def pipe(reader, writer, delay):
    """Forwards what `reader` reads to `writer`, each chunk `delay` seconds after it came."""
    queue = asyncio.Queue()

    async def send():
        while True:
            due, chunk = await queue.get()
            if chunk is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            queue.put_nowait((time.monotonic() + delay, chunk))
    except ConnectionError:
        pass
    queue.put_nowait((0, None))
    try:
        await sender
    except ConnectionError:
        pass


async def main(listen, target, delay):

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay),
            pipe(server_reader, client_writer, delay),
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        listen_port, target_port, delay_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
        if len(sys.argv) != 4 or delay_ms < 0:
            raise ValueError
    except (IndexError, ValueError):
        sys.exit("usage: latency-proxy.py LISTEN_PORT TARGET_PORT DELAY_MS (ports as numbers, DELAY_MS >= 0)")
    asyncio.run(main(listen_port, target_port, delay_ms / 1000))
