#!/usr/bin/env python3
"""What idle workers cost a coordinator while tasks trickle in: WORKERS simulated one-thread
workers long-poll a fresh `serve` (`--verify off`) with every thread idle, each leaving with the
first task it gets; then SUBMISSIONS single-board batches (distinct 8-puzzles, `manhattan`) are
submitted one at a time, 0.2 s apart. Prints the poll answers that carried a task and those that
came back empty, the coordinator's Poll calls (its /metrics) and its CPU over the submissions
(/proc). An idle poll ends empty at its long poll's deadline (1 s); other empty answers are
calls the queued tasks caused for nothing.

usage: scripts/idle-workers.py BIN WORKERS SUBMISSIONS
Needs Python with grpcio and grpcio-tools (as examples/python); the stubs are generated from
proto/ into a temporary directory. A Python client drives a few hundred workers at most on 2
cores: with more, it cannot poll again as fast as the answers come.
"""
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import grpc
from grpc_tools import protoc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROTO = os.path.join(ROOT, "proto")
# The worker protocol's version, as the workers of this tree speak it.
PROTOCOL_VERSION = int(re.search(r"PROTOCOL_VERSION: u32 = (\d+);",
                                 open(os.path.join(ROOT, "src", "proto.rs")).read())[1])


def stubs(into):
    """Generates the worker API's Python stubs into `into` and imports them."""
    protoc.main(["protoc", f"-I{PROTO}", f"--python_out={into}", f"--grpc_python_out={into}",
                 "tilesolve/v1/worker.proto"])
    sys.path.insert(0, into)
    from tilesolve.v1 import worker_pb2, worker_pb2_grpc
    return worker_pb2, worker_pb2_grpc


def eight_puzzles(count, seed=7):
    """`count` distinct solvable 8-puzzles (an even number of inversions among the tiles)."""
    rng, boards = random.Random(seed), []
    while len(boards) < count:
        cells = list(range(9))
        rng.shuffle(cells)
        tiles = [tile for tile in cells if tile]
        inversions = sum(a > b for i, a in enumerate(tiles) for b in tiles[i + 1:])
        board = ",".join(map(str, cells))
        if inversions % 2 == 0 and board not in boards:
            boards.append(board)
    return boards


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(pb, rpc, address, workers, boards, binary, work, on_start):
    counts = {"task": 0, "empty": 0}
    stop = asyncio.Event()

    async def idle_worker(stub):
        registered = await stub.Register(pb.RegisterRequest(
            threads=1, protocol_version=PROTOCOL_VERSION, host="idle-workers"))
        poll = pb.PollRequest(worker_id=registered.worker_id,
                              worker_secret=registered.worker_secret, free_slots=1, idle=True)
        while not stop.is_set():
            try:
                answer = await stub.Poll(poll)
            except grpc.aio.AioRpcError:
                return
            if answer.tasks:
                counts["task"] += 1
                return
            counts["empty"] += 1

    channels = [grpc.aio.insecure_channel(address) for _ in range(8)]
    stubs_ = [rpc.WorkersStub(channel) for channel in channels]
    running = [asyncio.create_task(idle_worker(stubs_[i % 8])) for i in range(workers)]
    await asyncio.sleep(3)
    counts["empty"] = 0
    on_start()
    started = time.time()
    for board in boards:
        path = os.path.join(work, "board.txt")
        with open(path, "w") as file:
            file.write(board + "\n")
        await asyncio.to_thread(subprocess.run, [binary, "submit", "--coordinator",
                                                 f"http://{address}", "--heuristic", "manhattan",
                                                 path], capture_output=True, check=True)
        await asyncio.sleep(0.2)
    stop.set()
    for task in running:
        task.cancel()
    return counts, time.time() - started


def main():
    binary, workers, submissions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with tempfile.TemporaryDirectory() as work:
        pb, rpc = stubs(work)
        log = open(os.path.join(work, "serve.log"), "w+")
        serve = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data",
                                  os.path.join(work, "store"), "--verify", "off"],
                                 stdout=subprocess.DEVNULL, stderr=log)
        try:
            address = None
            while address is None:
                time.sleep(0.1)
                found = re.search(r"tilesolve coordinator on (\S+)", open(log.name).read())
                address = found and found[1]
            before = []
            counts, seconds = asyncio.run(drive(
                pb, rpc, address, workers, eight_puzzles(submissions), binary, work,
                lambda: before.append(cpu_seconds(serve.pid))))
            spent = cpu_seconds(serve.pid) - before[0]
            metrics = urllib.request.urlopen(f"http://{address}/metrics").read().decode()
            polls = sum(float(line.split()[-1]) for line in metrics.splitlines()
                        if line.startswith("tilesolve_rpc_seconds_count")
                        and "Workers/Poll" in line)
        finally:
            serve.terminate()
            serve.wait()
    print(f"{workers} idle workers, {submissions} single-board batches in {seconds:.2f} s: "
          f"{counts['task']} answers with a task, {counts['empty']} empty; "
          f"{polls:.0f} polls in all; coordinator CPU over the submissions {spent:.2f} s")


if __name__ == "__main__":
    main()
