"""Submit a batch to a tilesolve coordinator from Python and print its results.

The gRPC API is plain protobuf; this uses only grpcio and code generated from ../../proto:

    pip install grpcio grpcio-tools
    python -m grpc_tools.protoc -I ../../proto --python_out=. --grpc_python_out=. tilesolve/v1/client.proto
    python submit_batch.py 127.0.0.1:7411 ../../tests/data/examples15.txt

It submits the file, follows the batch's progress stream until it is done, then reads and prints
every item's outcome, a page at a time (so a 100,000-line batch never has to fit one message). If
the coordinator needs a token, set TILESOLVE_TOKEN as for the CLI.
"""

import os
import sys

import grpc

from tilesolve.v1 import client_pb2 as pb
from tilesolve.v1 import client_pb2_grpc as rpc


def main(address: str, path: str, heuristic: str = "default") -> int:
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = handle.read().splitlines()
    token = os.environ.get("TILESOLVE_TOKEN")
    auth = [("authorization", f"Bearer {token}")] if token else []
    with grpc.insecure_channel(address) as channel:
        client = rpc.TilesolveStub(channel)
        request = pb.SubmitBatchRequest(lines=lines, heuristic=heuristic)
        submitted = client.SubmitBatch(request, metadata=auth)
        print(f"batch {submitted.batch_id}: {submitted.items} boards, {submitted.invalid} invalid", file=sys.stderr)
        for status in client.WatchBatch(pb.WatchBatchRequest(batch_id=submitted.batch_id), metadata=auth):
            print(f"  {status.solved + status.failed}/{status.total} done", file=sys.stderr)
            if status.done:
                break
        failures = 0
        token = ""
        while True:
            request = pb.GetBatchRequest(batch_id=submitted.batch_id, page_size=10000, page_token=token)
            page = client.GetBatch(request, metadata=auth)
            for item in page.items:
                if item.WhichOneof("outcome") == "solution":
                    print(f"{item.board}\t{item.solution.length}\t{item.solution.moves}")
                else:
                    failures += 1
                    print(f"{item.text}\terror: {item.error}")
            token = page.next_page_token
            if not token:
                break
        return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {sys.argv[0]} HOST:PORT BATCH_FILE [HEURISTIC]")
    sys.exit(main(*sys.argv[1:4]))
