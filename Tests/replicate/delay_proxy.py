#!/usr/bin/env python3
"""delay_proxy.py PORT TARGET_PORT RTT_MS - a TCP proxy for Tests/replicate/run.sh.

Listens on 127.0.0.1:PORT and connects each client to 127.0.0.1:TARGET_PORT,
adding RTT_MS milliseconds to every round trip: each chunk of bytes is held
RTT_MS / 2 in each direction, from the moment it was read. Only the chunk
waits, not the connection: bytes keep their order, and a client that
pipelines (sends again before the answer) keeps its requests in flight, as
on a long link. (The kernel's netem is not available on these machines.)
SIGSTOP pauses it (the kernel still accepts connections and buffers their
bytes), SIGCONT resumes it: a link that stalls. SIGUSR1 makes it lose every
answer (server to client) while requests still go through: a connection
whose answer comes is closed without it, so appends reach the log but
their acknowledgements, and whatever the client reads, are lost; SIGUSR2
ends that. Prints "ready" once listening; stops on SIGTERM.
"""
import asyncio
import os
import signal
import sys


async def pump(reader, writer, delay, lose=None):
    """Copies reader to writer, each chunk delay seconds after it was read;
    when lose() is true the chunk is lost and the connection closed."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def forward():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if lose is not None and lose():
                writer.close()
                break
            writer.write(data)
            await writer.drain()

    task = asyncio.ensure_future(forward())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass
    try:
        writer.close()
    except (ConnectionError, OSError):
        pass


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: delay_proxy.py PORT TARGET_PORT RTT_MS")
    port, target, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    delay = rtt_ms / 2000.0
    losing = [False]

    async def client(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pump(reader, up_writer, delay), pump(up_reader, writer, delay, lambda: losing[0]))

    async def serve():
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, losing.__setitem__, 0, True)
        loop.add_signal_handler(signal.SIGUSR2, losing.__setitem__, 0, False)
        server = await asyncio.start_server(client, "127.0.0.1", port)
        # SIGTERM: out at once, whatever the connections are doing.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, os._exit, 0)
        print("ready", flush=True)
        await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
