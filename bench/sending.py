#!/usr/bin/env python3
"""Sends against the release build: a kill -9 test and the send path's latency.

    bench/sending.py kill    [--backend sqlite|postgres] [--transport outbox|smtp] [--kills 100]
    bench/sending.py latency [--backend sqlite|postgres] [--transport smtp|outbox] [--sends 1000] [--clients 4]

kill: workers create events, generate their variants and send the recommended one while the
server is killed with SIGKILL at random moments and restarted on the same database, --kills
times. Every acknowledged write (a 2xx answer) is recorded. After the last restart it checks
that each one is still there, that no variant is left `sending` (the file outbox settles them
at start-up; with SMTP the script plays the operator: `churn variants stuck`, then `churn
variants settle` with the relay's log as evidence, counting them), and that emails and
recorded sends match one to one.

latency: p50/p99 of POST …/send against a loopback SMTP relay (or the file outbox), with
--clients concurrent clients.

Only the standard library; needs the release binaries (cargo build --release -p churn-server
-p churn-cli; CARGO_TARGET_DIR is honoured) and, for PostgreSQL, psql and a server reachable at
CHURN_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from server_process import ServerProcess, call  # noqa: E402
from loopback import SmtpSink  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SERVER_BIN = os.path.join(TARGET, "release", "churn-server")
CLI_BIN = os.path.join(TARGET, "release", "churn")
ACCOUNT_EMAIL = "bench@example.com"
PG_ADMIN = os.environ.get("CHURN_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


# --- a loopback SMTP relay (scripts/loopback.py) ----------------------------------------------

def headers_of(message):
    """(Message-ID without brackets, the To header's address) of a raw email."""
    m = re.search(rb"(?im)^message-id:\s*<([^>]+)>", message)
    to = re.search(rb"(?im)^to:[^\r\n]*?<?([^<>\s]+@[^<>\s]+?)>?\s*$", message)
    return (m.group(1).decode() if m else None, to.group(1).decode().lower() if to else None)


def smtp_relay(hold=0.0):
    """Keeps (Message-ID, recipient) of each message, answering after `hold` seconds."""
    return SmtpSink(headers_of, hold=lambda: time.sleep(hold), name="relay.bench")


# --- the server under test -------------------------------------------------------------------

class Service(ServerProcess):
    """A release server on one database (scripts/server_process.py), restarted at will."""

    def __init__(self, backend, smtp_port=None):
        work = tempfile.mkdtemp(prefix="churn-kill-")
        transport = ({"CHURN_SMTP_URL": f"smtp://127.0.0.1:{smtp_port}"} if smtp_port
                     else {"CHURN_EMAIL_OUTBOX": os.path.join(work, "outbox")})
        super().__init__(SERVER_BIN, backend, work, PG_ADMIN, "churn_kill", CHURN_DATA_DIR=work, **transport)

    def cleanup(self):
        super().cleanup()
        shutil.rmtree(self.work, ignore_errors=True)

    def cli(self, *args):
        out = subprocess.run([CLI_BIN, "--database-url", self.db, *args], check=True,
                             capture_output=True, text=True).stdout
        return out


def sign_up(service):
    status, body = call(service.base, "POST", "/auth/register",
                        {"name": "Bench", "email": ACCOUNT_EMAIL, "password": "benchmark password"})
    assert status == 201, (status, body)
    token = body["data"]["token"]
    status, body = call(service.base, "POST", "/projects", {"name": "Acme"}, token=token)
    assert status == 201, (status, body)
    return body["data"]["api_keys"]["secret_key"]


# --- kill -9 ---------------------------------------------------------------------------------

def kill_test(args):
    relay = smtp_relay(hold=0.02) if args.transport == "smtp" else None
    service = Service(args.backend, relay.port if relay else None)
    try:
        service.start()
        key = sign_up(service)
        acked = {"create": [], "generate": [], "send": []}
        lock = threading.Lock()
        stop = threading.Event()

        def worker(seed):
            rnd = random.Random(seed)
            pending = []  # events created, not yet generated (or generation unacknowledged)
            while not stop.is_set():
                base = service.base
                if base is None:
                    time.sleep(0.01)
                    continue
                status, body = call(base, "POST", "/projects/acme/churn-events",
                                    {"customer_email": f"c{rnd.randrange(1 << 40)}@example.com",
                                     "event_type": "cancellation", "mrr": 4900}, key=key)
                if status == 201:
                    with lock:
                        acked["create"].append(body["data"]["id"])
                    pending.append(body["data"]["id"])
                if not pending:
                    continue
                event_id = pending.pop()
                status, body = call(base, "POST", f"/projects/acme/churn-events/{event_id}/generate", key=key)
                if status != 200:
                    continue
                variants = body["data"]["variants"]
                with lock:
                    acked["generate"].append((event_id, [v["id"] for v in variants]))
                vid = next(v["id"] for v in variants if v["recommended"])
                status, body = call(base, "POST", f"/projects/acme/churn-events/{event_id}/variants/{vid}/send", key=key)
                if status == 200:
                    with lock:
                        acked["send"].append((event_id, vid, body["data"]["message_id"]))

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.workers)]
        for t in threads:
            t.start()
        started = time.time()
        for n in range(args.kills):
            time.sleep(random.uniform(args.min_up, args.max_up))
            service.kill()
            service.start()
        stop.set()
        for t in threads:
            t.join()
        load_seconds = time.time() - started

        # With SMTP nothing is guessed at start-up: the operator settles from the relay's log.
        settled = {"sent": 0, "not_sent": 0}
        stuck_before = json.loads(service.cli("--json", "variants", "stuck"))
        if relay:
            with relay.lock:
                delivered = {message_id for message_id, _ in relay.mail}
            for claim in stuck_before:
                outcome = "--sent" if claim["message_id"] in delivered else "--not-sent"
                service.cli("variants", "settle", claim["id"], outcome)
                settled["sent" if outcome == "--sent" else "not_sent"] += 1
        service.stop()
        service.start()  # one clean restart more: nothing may change

        lost = []
        for event_id in acked["create"]:
            status, _ = call(service.base, "GET", f"/projects/acme/churn-events/{event_id}", key=key)
            if status != 200:
                lost.append(("create", event_id, status))
        for event_id, vids in acked["generate"]:
            status, body = call(service.base, "GET", f"/projects/acme/churn-events/{event_id}/variants", key=key)
            if status != 200 or sorted(v["id"] for v in body["data"]) != sorted(vids):
                lost.append(("generate", event_id, status))
        for event_id, vid, _ in acked["send"]:
            status, body = call(service.base, "GET", f"/projects/acme/churn-events/{event_id}/variants", key=key)
            v = next((v for v in (body or {}).get("data", []) if v["id"] == vid), None)
            status_e, event = call(service.base, "GET", f"/projects/acme/churn-events/{event_id}", key=key)
            event_status = (event or {}).get("data", {}).get("status")
            if v is None or v["status"] != "sent" or event_status != "email_sent":
                lost.append(("send", vid, v and v["status"], status_e, event_status))
        sending = service.sql("SELECT id FROM recovery_variants WHERE status = 'sending'")
        recorded = {row[0] for row in service.sql(
            "SELECT message_id FROM recovery_variants WHERE status IN ('sent', 'opened', 'clicked')")}
        windows = int(service.sql("SELECT COUNT(*) FROM jobs WHERE kind = 'expire_churn_event'")[0][0])
        events_sent = int(service.sql("SELECT COUNT(*) FROM churn_events WHERE status = 'email_sent'")[0][0])
        if relay:
            with relay.lock:
                mail = list(relay.mail)
        else:
            outbox = os.path.join(service.work, "outbox")
            mail = []
            for name in os.listdir(outbox) if os.path.isdir(outbox) else []:
                if name.endswith(".eml"):
                    with open(os.path.join(outbox, name), "rb") as f:
                        mail.append(headers_of(f.read()))
        # The account's own mail (the verification email of sign-up) is not a recovery email:
        # it has no variant, so it is counted apart and must have gone out exactly once.
        emails = [message_id for message_id, to in mail if to != ACCOUNT_EMAIL]
        account_emails = sum(1 for _, to in mail if to == ACCOUNT_EMAIL)
        # What start-up settled from the outbox over all the restarts (its log lines).
        at_start = {"sent": 0, "not_sent": 0}
        for name in os.listdir(service.work):
            if name.startswith("server-"):
                for line in open(os.path.join(service.work, name), errors="replace"):
                    if "settled sends left unfinished" in line:
                        entry = json.loads(line)
                        at_start["sent"] += int(entry.get("sent", 0))
                        at_start["not_sent"] += int(entry.get("not_sent", 0))
        duplicates = len(emails) - len(set(emails))
        unrecorded = set(emails) - recorded
        phantom = recorded - set(emails)
        report = {
            "backend": args.backend, "transport": args.transport, "kills": args.kills,
            "load_seconds": round(load_seconds, 1),
            "acknowledged": {k: len(v) for k, v in acked.items()},
            "acknowledged_lost": len(lost),
            "settled_at_start_up": at_start,
            "claims_after_restarts": len(stuck_before),
            "settled_by_cli": settled,
            "left_sending": len(sending),
            "emails": len(emails), "duplicate_emails": duplicates, "account_emails": account_emails,
            "emails_without_record": len(unrecorded), "records_without_email": len(phantom),
            "events_email_sent": events_sent, "expiry_jobs": windows,
        }
        print(json.dumps(report))
        # Every event that reached email_sent started its recovery window, once.
        ok = (not lost and not sending and not duplicates and not unrecorded and not phantom
              and windows == events_sent and account_emails == 1)
        if not ok:
            print("FAILED", lost[:10], sending[:10], list(unrecorded)[:5], list(phantom)[:5], file=sys.stderr)
            last_log = os.path.join(service.work, f"server-{len(service.logs) - 1}.log")
            print("last server log:", open(last_log, errors="replace").read()[-3000:], file=sys.stderr)
            for mid in list(unrecorded)[:5]:
                # What the database says about the message and its variant, for the diagnosis.
                print("variant rows for", mid, service.sql(
                    "SELECT id, status, message_id, claimed_at, sent_at, updated_at FROM recovery_variants "
                    f"WHERE message_id = '{mid}' OR id = '{mid.split('@')[0]}'"), file=sys.stderr)
            sys.exit(1)
    finally:
        service.cleanup()


# --- send latency ----------------------------------------------------------------------------

def latency_test(args):
    relay = smtp_relay()
    service = Service(args.backend, relay.port if args.transport == "smtp" else None)
    try:
        service.start()
        key = sign_up(service)
        # Every variant can be sent once: nine per event.
        targets = []
        while len(targets) < args.sends + args.clients * 10:
            status, body = call(service.base, "POST", "/projects/acme/churn-events",
                                {"customer_email": f"c{len(targets)}@example.com", "event_type": "cancellation"}, key=key)
            assert status == 201, body
            event_id = body["data"]["id"]
            status, body = call(service.base, "POST", f"/projects/acme/churn-events/{event_id}/generate", key=key)
            assert status == 200, body
            targets += [(event_id, v["id"]) for v in body["data"]["variants"]]
        warmup = targets[: args.clients * 10]
        targets = targets[args.clients * 10:][: args.sends]
        times, failures = [], []
        lock = threading.Lock()

        def client(work, record):
            for event_id, vid in work:
                t0 = time.perf_counter()
                status, _ = call(service.base, "POST", f"/projects/acme/churn-events/{event_id}/variants/{vid}/send", key=key)
                elapsed = time.perf_counter() - t0
                with lock:
                    if status == 200:
                        if record:
                            times.append(elapsed)
                    else:
                        failures.append(status)

        for batch, record in ((warmup, False), (targets, True)):
            threads = [threading.Thread(target=client, args=(batch[i:: args.clients], record)) for i in range(args.clients)]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
        times.sort()
        pct = lambda p: times[min(len(times) - 1, int(p * len(times)))] * 1000
        print(json.dumps({"backend": args.backend, "transport": args.transport, "clients": args.clients, "sends": len(times),
                          "failures": len(failures), "sends_per_s": round(len(times) / wall, 1),
                          "p50_ms": round(pct(0.50), 2), "p99_ms": round(pct(0.99), 2),
                          "emails": len(relay.mail)}))
    finally:
        service.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    kill = sub.add_parser("kill")
    kill.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    kill.add_argument("--transport", choices=["outbox", "smtp"], default="outbox")
    kill.add_argument("--kills", type=int, default=100)
    kill.add_argument("--workers", type=int, default=4)
    kill.add_argument("--min-up", type=float, default=0.3, help="seconds the server runs at least between kills")
    kill.add_argument("--max-up", type=float, default=1.2)
    lat = sub.add_parser("latency")
    lat.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    lat.add_argument("--transport", choices=["smtp", "outbox"], default="smtp")
    lat.add_argument("--sends", type=int, default=1000)
    lat.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    for binary in (SERVER_BIN, CLI_BIN):
        if not os.path.exists(binary):
            sys.exit(f"{binary} is missing: cargo build --release -p churn-server -p churn-cli")
    (kill_test if args.command == "kill" else latency_test)(args)


if __name__ == "__main__":
    main()
