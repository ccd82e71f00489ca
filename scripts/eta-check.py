#!/usr/bin/env python3
"""Does the batch ETA hold? Runs one batch through `serve` + N workers on 127.0.0.1 (fresh
stores, the tables linked in), reads the batch's status from the dashboard's API every
POLL seconds (nodes, nodes/s, the ETA range as shown), and once it ended, finds the first
readings at 50% and 90% of the batch's final nodes (the work) and says whether the range shown
then held the true time left (the batch's end minus the reading's time).

usage: [BIN=target/release/tilesolve] scripts/eta-check.py TABLE_DIR BATCH_FILE
           [--workers 2] [--threads 1] [--heuristic default] [--poll 0.25] [--keep DIR]
Exit status 0 when both ranges held, 1 when one did not.
"""
import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tables")
    parser.add_argument("batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--heuristic", default="default")
    parser.add_argument("--poll", type=float, default=0.25)
    parser.add_argument("--keep", help="copy the readings and logs here")
    args = parser.parse_args()
    here = pathlib.Path(__file__).resolve().parent
    binary = os.environ.get("BIN", str(here.parent / "target/release/tilesolve"))
    work = pathlib.Path(tempfile.mkdtemp())
    processes = []
    try:
        for name in ["coordinator"] + [f"w{i}" for i in range(args.workers)]:
            (work / name).mkdir()
            for table in pathlib.Path(args.tables).glob("*.pdb"):
                (work / name / table.name).symlink_to(table.resolve())
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = lambda name: open(work / f"{name}.log", "w")
        processes.append(subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data", str(work / "coordinator")],
            stdout=log("serve"), stderr=subprocess.STDOUT))
        time.sleep(0.7)
        for i in range(args.workers):
            processes.append(subprocess.Popen(
                [binary, "worker", "--coordinator", url, "--threads", str(args.threads),
                 "--data", str(work / f"w{i}")], stdout=log(f"w{i}"), stderr=subprocess.STDOUT))
        time.sleep(1.5)
        submitted = subprocess.run(
            [binary, "submit", "--coordinator", url, "--heuristic", args.heuristic, args.batch],
            check=True, capture_output=True, text=True)
        batch = int(submitted.stdout.split()[0])
        start = time.monotonic()
        readings = []
        while True:
            with urllib.request.urlopen(f"{url}/api/batches/{batch}?limit=1") as answer:
                status = json.load(answer)["status"]
            now = time.monotonic() - start
            readings.append({"t": now, "nodes": status["nodes"],
                             "nodes_per_second": status["nodes_per_second"],
                             "low": status.get("eta_low_seconds"),
                             "high": status.get("eta_high_seconds"), "done": status["done"],
                             "solved": status["solved"], "total": status["total"]})
            if status["done"]:
                break
            time.sleep(args.poll)
        end = readings[-1]["t"]
        final = readings[-1]["nodes"]
        print(f"batch of {readings[-1]['total']}: {readings[-1]['solved']} solved, "
              f"{final:,} nodes, {end:.1f} s (readings every {args.poll} s)")
        held = True
        for share in (0.5, 0.9):
            reading = next(r for r in readings if r["nodes"] >= share * final)
            left = end - reading["t"]
            if reading["high"] is None:
                print(f"at {share:.0%} of the work ({reading['t']:.1f} s): no estimate shown, "
                      f"{left:.1f} s were left: NOT HELD")
                held = False
                continue
            ok = reading["low"] <= left <= reading["high"]
            held &= ok
            print(f"at {share:.0%} of the work ({reading['t']:.1f} s, "
                  f"{reading['nodes_per_second'] / 1e6:.2f} M nodes/s): shown "
                  f"{reading['low']:.1f}-{reading['high']:.1f} s, true {left:.1f} s: "
                  f"{'held' if ok else 'NOT HELD'}")
        if args.keep:
            keep = pathlib.Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "readings.json").write_text(json.dumps(readings))
            for name in work.glob("*.log"):
                shutil.copy(name, keep)
        return 0 if held else 1
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
