"""Submit a batch to a tilesolve coordinator from Python and print its results.

The gRPC API is plain protobuf; this uses only grpcio and code generated from ../../proto:

    pip install grpcio grpcio-tools
    python -m grpc_tools.protoc -I ../../proto --python_out=. --grpc_python_out=. tilesolve/v1/client.proto
    python submit_batch.py 127.0.0.1:7411 ../../tests/data/examples15.txt
    python submit_batch.py 127.0.0.1:7411 hard.txt --heuristic pdb:7-8 --time-limit 3
    python submit_batch.py 127.0.0.1:7411 twelve.txt --size 3x4

It submits the file, follows the batch's progress stream until it is done, then reads and prints
every item's outcome, a page at a time (so a 100,000-line batch never has to fit one message):
board, length and moves, tab-separated, and for a board a time or node limit stopped, a fourth
field `bounded lower_bound=B` (the path is not proven optimal; no solution is shorter than B).
A rectangle's shape travels on its line, as a ` # size=RxC` fact (or its rows in braces);
`--size RxC` adds the fact to every line without one, as the CLI's --size does. If the
coordinator needs a token, set TILESOLVE_TOKEN as for the CLI.
"""

import argparse
import os
import sys

import grpc

from tilesolve.v1 import client_pb2 as pb
from tilesolve.v1 import client_pb2_grpc as rpc


def with_size(line: str, size: str) -> str:
    """The line with a `size=` fact for `size`, unless it is blank, a comment or says its own."""
    text = line.strip()
    if not size or not text or text.startswith("#"):
        return line
    board, _, facts = text.partition(" # ")
    if any(fact.startswith("size=") for fact in facts.split()):
        return line
    return f"{text} size={size}" if facts.strip() else f"{board.strip()} # size={size}"


def main(address: str, path: str, heuristic: str, time_limit: float, node_limit: int, size: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [with_size(line, size) for line in handle.read().splitlines()]
    token = os.environ.get("TILESOLVE_TOKEN")
    auth = [("authorization", f"Bearer {token}")] if token else []
    with grpc.insecure_channel(address) as channel:
        client = rpc.TilesolveStub(channel)
        request = pb.SubmitBatchRequest(
            lines=lines, heuristic=heuristic, time_limit_seconds=time_limit, node_limit=node_limit
        )
        submitted = client.SubmitBatch(request, metadata=auth)
        print(f"batch {submitted.batch_id}: {submitted.items} boards, {submitted.invalid} invalid", file=sys.stderr)
        for status in client.WatchBatch(pb.WatchBatchRequest(batch_id=submitted.batch_id), metadata=auth):
            print(f"  {status.solved + status.failed + status.bounded}/{status.total} done", file=sys.stderr)
            if status.done:
                break
        failures = 0
        token = ""
        while True:
            request = pb.GetBatchRequest(batch_id=submitted.batch_id, page_size=10000, page_token=token)
            page = client.GetBatch(request, metadata=auth)
            for item in page.items:
                outcome = item.WhichOneof("outcome")
                if outcome == "solution":
                    print(f"{item.board}\t{item.solution.length}\t{item.solution.moves}")
                elif outcome == "bounded":
                    bounded = item.bounded
                    print(f"{item.board}\t{bounded.length}\t{bounded.moves}\tbounded lower_bound={bounded.lower_bound}")
                else:
                    failures += 1
                    print(f"{item.text}\terror: {item.error}")
            token = page.next_page_token
            if not token:
                break
        return 1 if failures else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Submit a batch file to a tilesolve coordinator.")
    parser.add_argument("address", help="the coordinator, HOST:PORT")
    parser.add_argument("batch_file", help="one board per line")
    parser.add_argument("--heuristic", default="default")
    parser.add_argument("--time-limit", type=float, default=0.0, help="seconds of search per board")
    parser.add_argument("--node-limit", type=int, default=0, help="expanded nodes per board")
    parser.add_argument("--size", default="", metavar="RxC", help="rows x columns of every board without a size= fact")
    args = parser.parse_args()
    sys.exit(main(args.address, args.batch_file, args.heuristic, args.time_limit, args.node_limit, args.size))
