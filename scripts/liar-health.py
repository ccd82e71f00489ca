"""A liar and a health probe against one coordinator, for scripts/quarantine-health.sh.

usage: liar-health.py STUBS_DIR HOST:PORT WORKER_TOKEN SECONDS

The liar speaks the worker protocol with the worker token and lies on every task without
searching: a whole puzzle "spent its budget" 20 moves above its bound, a subtree "has nothing
within its bound". Under --verify full the first audit of a lie on a puzzle's solution
quarantines it. Meanwhile the gRPC health check is called every 10 ms; the summary gives its
latency (p50, p99, max) and how many calls failed or were not SERVING.
"""
import sys, time, threading, json
sys.path.insert(0, sys.argv[1])
import grpc
from tilesolve.v1 import worker_pb2 as wpb, worker_pb2_grpc as wgrpc
addr, token, seconds = sys.argv[2], sys.argv[3], float(sys.argv[4])
auth = [("authorization", f"Bearer {token}")]
stop = time.time() + seconds
samples = []  # (time, latency, ok)
def health():
    ch = grpc.insecure_channel(addr)
    check = ch.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda x: x, response_deserializer=lambda b: b)
    while time.time() < stop:
        t0 = time.time()
        try:
            r = check(b"", timeout=5.0); ok = r == b"\x08\x01"
        except Exception as e:
            ok = False
        samples.append((t0, time.time() - t0, ok))
        time.sleep(0.01)
def liar():
    ch = grpc.insecure_channel(addr)
    w = wgrpc.WorkersStub(ch)
    reg = w.Register(wpb.RegisterRequest(threads=1, protocol_version=3, host="liar", name="liar"), metadata=auth)
    wid, secret = reg.worker_id, reg.worker_secret
    results, lies = [], 0
    while time.time() < stop:
        try:
            resp = w.Poll(wpb.PollRequest(worker_id=wid, worker_secret=secret, free_slots=4, idle=not results, results=results), metadata=auth)
        except grpc.RpcError as e:
            print("liar poll ended:", e.code(), e.details()[:200], flush=True); return
        results = []
        for t in resp.tasks:
            lies += 1
            if t.iterate:
                results.append(wpb.TaskResult(task_id=t.task_id, nodes=1000, seconds=0.001, budget_spent_at=t.bound + 20))
            else:
                results.append(wpb.TaskResult(task_id=t.task_id, nodes=1000, seconds=0.001, next_bound=t.bound + 2))
        if not resp.tasks:
            time.sleep(0.05)
threads = [threading.Thread(target=health), threading.Thread(target=liar)]
for t in threads: t.start()
for t in threads: t.join()
lat = sorted(s[1] for s in samples)
bad = sum(1 for s in samples if not s[2])
print(json.dumps({"health_checks": len(samples), "not_serving_or_failed": bad, "p50_ms": 1000*lat[len(lat)//2], "p99_ms": 1000*lat[int(len(lat)*0.99)], "max_ms": 1000*lat[-1]}))
worst = sorted(samples, key=lambda s: -s[1])[:5]
for s in worst: print("slow check at %.3f: %.1f ms ok=%s" % (s[0], 1000*s[1], s[2]))
