"""Outcome-webhook fan-out benchmark helper (bench/outcomes.sh).

receive <file> <cert> <key>: a loopback HTTPS receiver answering 204 to every POST and writing
  one line per delivery (`path type msg_id created_at arrived_at`) to <file>; prints its port.
create <api> <secret key> <n>: creates <n> churn events through the API (8 connections).
report <file> <expected>: waits for <expected> deliveries, then prints the latency from each
  message's `created_at` (set in the transaction that records the event) to its arrival.
"""
import concurrent.futures
import datetime
import http.client
import http.server
import json
import ssl
import sys
import threading
import time
import urllib.parse


def receive(path, cert, key):
    out = open(path, "a", buffering=1)
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            arrived = time.time()
            msg = json.loads(body)
            with lock:
                out.write(f"{self.path} {msg['type']} {msg['id']} {msg['created_at']} {arrived:.6f}\n")
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def create(api, key, n):
    url = urllib.parse.urlsplit(api)

    def post(batch):
        conn = http.client.HTTPConnection(url.hostname, url.port)
        for i in batch:
            body = json.dumps({"customer_email": f"fan{i}@example.com", "event_type": "cancellation",
                               "cancel_reason": "too_expensive", "mrr": 4900})
            conn.request("POST", f"{url.path}/projects/default/churn-events", body,
                         {"content-type": "application/json", "x-api-key": key})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 201, (resp.status, i)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(post, [range(k, n, 8) for k in range(8)]))


def report(path, expected):
    deadline = time.time() + 600
    while True:
        lines = open(path).read().splitlines()
        if len(lines) >= expected or time.time() > deadline:
            break
        time.sleep(0.5)
    latencies = []
    for line in lines:
        _, _, _, created, arrived = line.split()
        at = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
        latencies.append(float(arrived) - at)
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    print(f"{len(lines)} of {expected} | {pick(0.5):.0f} ms | {pick(0.99):.0f} ms | {latencies[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "receive":
        receive(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "create":
        create(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "report":
        report(sys.argv[2], int(sys.argv[3]))
