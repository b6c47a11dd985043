#!/usr/bin/env python3
"""kill -9 over the write paths of wave 2 (issue 19, item 12). Run it through scripts/killtest.

    scripts/killtest.py --backend sqlite|postgres [--cycles 10] [--seconds 3] [--seed N]

One server (the debug build by default, KILLTEST_BIN overrides) in dev mode on one database,
with loopback fakes as real servers: an SMTP sink, and one HTTPS server (a throw-away CA given
as CHURN_EXTRA_CA_FILE; CHURN_WEBHOOK_ALLOW_PRIVATE lets tenant URLs be loopback) that plays
Stripe's API and the alert receiver. Each cycle:

  1. load, one client per path, each recording what the server acknowledged (a 2xx answer):
     /track batches with event ids (an acknowledged batch is sometimes sent again, as a
     client does when it did not see the answer); signed `invoice.payment_failed` events, each
     sent one to three times with the same id as the provider does, and sent again in later
     cycles until one is acknowledged; cancel-flow submissions (customer_hash signed with the
     identity secret) accepting a discount or a pause, or declining; churn events, which
     autopilot emails; churn-risk recomputes, whose alerts go to the receiver;
  2. `kill -9` at a random moment of the load, restart on the same database, the dev clock put
     back where it was (it lives in the process); in half of the cycles a second kill while
     the restarted server drains the due jobs, and a restart; then due jobs run
     (`POST /dev/jobs/run`) until none is left: dunning steps at the fake provider, dunning
     and autopilot emails, alert deliveries, offers left to their job;
  3. checks, over everything so far (a cycle fails when one of its checks finds a violation):
     - lost: every acknowledged tracked event id, provider event (with its payment-failure
       record and its churn event), cancel-flow churn event (recovered when the offer was
       accepted), churn event is stored; every alert is delivered; every acknowledged accepted
       offer reached the provider;
     - twice: no tracked event stored again (a re-sent acknowledged batch answers accepted 0);
       one payment-failure record and one churn event per invoice; a re-sent acknowledged
       provider event answers `duplicate`; at the fake provider at most one coupon per churn
       event, one discount and one pause per subscription, one successful invoice payment,
       and no more pay calls (distinct idempotency keys) than attempts recorded; at the SMTP
       sink at most one email per (recipient, subject), i.e. per job step, and at most one
       autopilot email per churn event (follow-ups are off); an alert is not delivered twice
       by one process (a second delivery of the same `webhook-id` after a kill is the
       documented at-least-once of webhooks, services/delivery.rs, and is counted apart).

Prints a JSON line per cycle and `killtest: <backend>: N passed, M failed`; exits 1 on any
violation. The seed is printed; give it back with --seed to replay the same kill moments and
load choices (timing still differs from run to run, so the interleavings do too).
Standard library only; needs openssl, and psql for PostgreSQL (KILLTEST_POSTGRES_URL, default
postgres://postgres@127.0.0.1:5432/postgres).
"""

import argparse
import datetime
import email
import email.policy
import hashlib
import hmac
import http.server
import json
import os
import random
import re
import shutil
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict

from server_process import ServerProcess, call
from loopback import JsonHandler, SmtpSink

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SERVER_BIN = os.environ.get("KILLTEST_BIN", os.path.join(TARGET, "debug", "churn-server"))
PG_ADMIN = os.environ.get("KILLTEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
OWNER = "owner@killtest.example"
WHSEC = "whsec_killtest"
SLUG = "acme"
# Each fake records an effect, then holds its answer this long, so that kills fall between an
# effect and the sender's hearing of it.
HOLD = 0.05
# Answers being held back, by kind: read at each kill, to say which windows the kills hit.
HELD = Counter()
HELD_LOCK = threading.Lock()


def hold(kind):
    with HELD_LOCK:
        HELD[kind] += 1
    try:
        time.sleep(HOLD)
    finally:
        with HELD_LOCK:
            HELD[kind] -= 1


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# --- loopback fakes ----------------------------------------------------------------------------

def smtp_sink(generation):
    """The SMTP sink (scripts/loopback.py), keeping (recipient, subject, server generation)
    of each message and holding its answer back."""

    def record(raw):
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        to = msg["to"].addresses[0].addr_spec.lower() if msg["to"] else ""
        return (to, str(msg["subject"] or ""), generation())

    return SmtpSink(record, hold=lambda: hold("email"), name="sink.killtest")


class Fake:
    """Stripe's API (idempotent by `Idempotency-Key`, as the real one) and the alert
    receiver, over HTTPS. Records every effect: coupons, discounts, pauses, invoice payments,
    alert deliveries."""

    def __init__(self, cert, key, generation):
        self.lock = threading.Lock()
        self.replies = {}  # idempotency key -> (status, body)
        self.subscriptions = {}  # subscription id -> customer email (registered by the driver)
        self.coupons = []  # (key, churn event id)
        self.discounts = []  # (subscription, key)
        self.pauses = []  # (subscription, key)
        self.pay_calls = defaultdict(set)  # invoice -> distinct idempotency keys
        self.paid = defaultdict(list)  # invoice -> keys that paid it
        self.alerts = []  # (webhook-id, generation)
        fake = self

        class Handler(JsonHandler):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                m = re.fullmatch(r"/v1/subscriptions/([^/]+)", url.path)
                if m:
                    sub = m.group(1)
                    with fake.lock:
                        owner = fake.subscriptions.get(sub)
                    if owner is None:
                        return self.answer(404, {"error": {"type": "invalid_request_error", "message": "No such subscription"}})
                    return self.answer(200, {"id": sub, "object": "subscription",
                                             "customer": {"id": f"cus_{sub}", "object": "customer", "email": owner}})
                m = re.fullmatch(r"/v1/customers/([^/]+)", url.path)
                if m:
                    return self.answer(200, {"id": m.group(1), "object": "customer", "email": f"{m.group(1)}@killtest.example"})
                return self.answer(404, {"error": {"type": "invalid_request_error", "message": "no such route"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path == "/alerts":
                    with fake.lock:
                        fake.alerts.append((self.headers.get("webhook-id"), generation()))
                    hold("alert")
                    return self.answer(200, {"ok": True})
                key = self.headers.get("idempotency-key")
                if not key:
                    return self.answer(400, {"error": {"type": "invalid_request_error", "message": "no Idempotency-Key"}})
                form = dict(urllib.parse.parse_qsl(raw.decode()))
                with fake.lock:
                    if key in fake.replies:
                        return self.answer(*fake.replies[key])
                    reply = fake.effect(self.path, key, form)
                    fake.replies[key] = reply
                hold("provider")  # done, the answer held back: as the SMTP sink's
                return self.answer(*reply)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            request_queue_size = 128

            def handle_error(self, request, client_address):
                pass  # the server was killed while its answer was held back

        self.server = Server(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def effect(self, path, key, form):
        """The answer to a POST with a key not seen before (the lock held)."""
        if path == "/v1/coupons":
            coupon = f"co_{len(self.coupons) + 1}"
            self.coupons.append((key, form.get("metadata[churn_event_id]")))
            return 200, {"id": coupon, "object": "coupon", "percent_off": form.get("percent_off")}
        if path == "/v1/promotion_codes":
            # A discount email's code (§15), made when the email is sent.
            return 200, {"id": f"promo_{key}", "object": "promotion_code", "code": form.get("code")}
        m = re.fullmatch(r"/v1/subscriptions/([^/]+)", path)
        if m:
            sub = m.group(1)
            if "discounts[0][coupon]" in form:
                self.discounts.append((sub, key))
            if "pause_collection[behavior]" in form:
                self.pauses.append((sub, key))
            return 200, {"id": sub, "object": "subscription", "status": "active"}
        m = re.fullmatch(r"/v1/invoices/([^/]+)/pay", path)
        if m:
            invoice = m.group(1)
            self.pay_calls[invoice].add(key)
            if self.paid.get(invoice):
                return 400, {"error": {"type": "invalid_request_error", "message": "Invoice is already paid"}}
            # The first pay call of an invoice is a soft decline, the next pays: two dunning steps each.
            if len(self.pay_calls[invoice]) == 1:
                return 402, {"error": {"type": "card_error", "code": "card_declined",
                                       "decline_code": "insufficient_funds", "message": "Your card was declined."}}
            self.paid[invoice].append(key)
            return 200, {"id": invoice, "object": "invoice", "status": "paid"}
        return 404, {"error": {"type": "invalid_request_error", "message": "no such route"}}


def make_tls(work):
    """A throw-away CA and a localhost certificate it signed: (ca.pem, leaf.pem, leaf.key)."""
    def ssl_(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=work)
    ssl_("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=killtest CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-keyout", "ca.key", "-out", "ca.pem")
    ssl_("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "leaf.key", "-out", "leaf.csr")
    with open(os.path.join(work, "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    ssl_("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
         "-extfile", "ext", "-out", "leaf.pem")
    return tuple(os.path.join(work, f) for f in ("ca.pem", "leaf.pem", "leaf.key"))


# --- the server under test ---------------------------------------------------------------------

class Service(ServerProcess):
    """The server on one database, killed and restarted at will. The dev clock lives in the
    process: each start puts it back at `now` before anyone else may call."""

    def __init__(self, backend, work, smtp_port, ca):
        super().__init__(SERVER_BIN, backend, work, PG_ADMIN, "churn_killtest",
                         CHURN_DATA_DIR=os.path.join(work, "data"), CHURN_DEV_MODE="true",
                         CHURN_WEBHOOK_ALLOW_PRIVATE="true", CHURN_EXTRA_CA_FILE=ca,
                         CHURN_SMTP_URL=f"smtp://127.0.0.1:{smtp_port}", RUST_BACKTRACE="1")
        self.generation = 0
        self.now = datetime.datetime.now(datetime.timezone.utc)

    def started(self, base):
        status, _ = call(base, "POST", "/dev/clock", {"set": iso(self.now)})
        if status != 200:
            raise SystemExit(f"the dev clock could not be set ({status}); is CHURN_DEV_MODE honoured?")
        self.generation += 1

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)
        status, _ = call(self.base, "POST", "/dev/clock", {"set": iso(self.now)})
        assert status == 200, ("POST /dev/clock", status)

    def run_jobs(self):
        status, body = call(self.base, "POST", "/dev/jobs/run", timeout=120)
        assert status == 200, ("POST /dev/jobs/run", status, body)
        return body["data"]["ran"]


# --- the run -----------------------------------------------------------------------------------

class KillTest:
    def __init__(self, args):
        self.args = args
        self.rnd = random.Random(args.seed)
        self.work = tempfile.mkdtemp(prefix="churn-killtest-")
        ca, cert, key = make_tls(self.work)
        generation = lambda: self.service.generation  # noqa: E731
        self.smtp = smtp_sink(generation)
        self.fake = Fake(cert, key, generation)
        self.service = Service(args.backend, self.work, self.smtp.port, ca)
        self.lock = threading.Lock()
        # What the server acknowledged.
        self.tracked = set()  # event ids
        self.track_batches = []  # acknowledged batches, to send again
        self.provider_events = {}  # event id -> (invoice, payer email)
        self.unacked_events = []  # (event id, body) still to be re-sent, as the provider does
        self.cancel_events = {}  # churn event id -> (email, subscription, accepted kind or None)
        self.churn_events = {}  # churn event id -> email
        self.recomputes = 0
        self.alerts_raised = 0
        self.counter = 0
        self.violations = []  # of the current cycle
        self.settle_runs = []  # (jobs run, seconds) of each POST /dev/jobs/run while settling
        self.killed_holding = Counter()  # kills that fell while a fake held back an answer, by kind

    def next_n(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def violation(self, text):
        with self.lock:
            self.violations.append(text)

    # --- set-up ---
    def set_up(self):
        s = self.service
        s.start()
        status, body = call(s.base, "POST", "/auth/register",
                            {"name": "Killtest", "email": OWNER, "password": "killtest password"})
        assert status == 201, (status, body)
        self.token = body["data"]["token"]
        status, body = call(s.base, "POST", "/projects", {"name": "Acme"}, token=self.token)
        assert status == 201, (status, body)
        assert body["data"]["slug"] == SLUG, body
        self.project_id = body["data"]["id"]
        self.secret = body["data"]["api_keys"]["secret_key"]
        self.public = body["data"]["api_keys"]["public_key"]
        fake = f"https://localhost:{self.fake.port}"
        for method, path, doc in [
            ("PUT", f"/projects/{SLUG}/providers/stripe",
             {"api_key": "sk_test_killtest", "webhook_secret": WHSEC, "api_base": fake}),
            ("PUT", f"/projects/{SLUG}/email-settings", {"from_name": "Acme", "from_email": "billing@acme.example"}),
            ("PUT", f"/projects/{SLUG}/dunning-config",
             # fixed: hourly retries reach the pay path within a cycle (smart waits a day or more).
             {"enabled": True, "schedule": "fixed", "max_retries": 4, "retry_interval_hours": 1, "send_emails": True,
              "sender_name": "Acme billing", "tone_sequence": ["friendly", "professional", "urgent", "final"]}),
            ("PUT", f"/projects/{SLUG}/churn-risk/config",
             {"enabled": True, "delivery_mode": "webhook", "risk_threshold": 0, "webhook_url": f"{fake}/alerts",
              "email_tone": "friendly", "check_interval_hours": 168}),
            ("PATCH", f"/projects/{SLUG}",
             {"settings": {"autopilot": {"enabled": True, "delay_minutes": 0, "follow_up_days": 0, "holdout_percent": 0}}}),
        ]:
            status, body = call(s.base, method, path, doc, token=self.token)
            assert status == 200, (path, status, body)
        # The DNS proof of the sender domain is tested elsewhere (mailrules); here it is granted.
        s.sql(f"UPDATE email_settings SET verified_at = '2026-01-01T00:00:00.000Z' WHERE project_id = '{self.project_id}'")
        status, body = call(s.base, "GET", f"/projects/{SLUG}/identity-secret", token=self.token)
        assert status == 200, (status, body)
        self.identity = body["data"]["identity_secret"]

    # --- load, one client per write path ---
    def track(self, stop, rnd):
        while not stop.is_set():
            base = self.service.base
            if self.track_batches and rnd.random() < 0.15:
                batch = rnd.choice(self.track_batches)
                status, body = call(base, "POST", "/track", {"events": batch}, key=self.secret)
                if status == 200 and body["accepted"] != 0:
                    self.violation(f"track: an acknowledged batch sent again stored {body['accepted']} events again")
                continue
            now = self.service.now
            batch = []
            for _ in range(20):
                n = self.next_n()
                # Nine days of history, so that the customer is scored (and alerted on).
                back = rnd.choice([0, 1, 3, 9])
                batch.append({"id": f"kt-{n}", "event": rnd.choice(["login", "feature_used", "api_error"]),
                              "customer_email": f"t{n % 40 + 40 * (n // 2000)}@killtest.example",
                              "timestamp": iso(now - datetime.timedelta(days=back, minutes=1))})
            status, body = call(base, "POST", "/track", {"events": batch}, key=self.secret)
            if status == 200:
                with self.lock:
                    self.tracked.update(e["id"] for e in batch)
                    self.track_batches.append(batch)

    def provider(self, stop, rnd):
        while not stop.is_set():
            with self.lock:
                pending = self.unacked_events.pop(0) if self.unacked_events and rnd.random() < 0.5 else None
            if pending is None:
                n = self.next_n()
                event_id, invoice, payer = f"evt_kt_{n}", f"in_kt_{n}", f"payer{n}@killtest.example"
                body = json.dumps({"id": event_id, "object": "event", "type": "invoice.payment_failed",
                                   "data": {"object": {"id": invoice, "object": "invoice", "customer": f"cus_kt_{n}",
                                                       "customer_email": payer, "amount_due": 2900, "currency": "usd",
                                                       "subscription": f"sub_pay_{n}",
                                                       "hosted_invoice_url": f"https://invoice.example/i/{n}"}}},
                                  separators=(",", ":"))
                meta = (invoice, payer)
            else:
                event_id, body, meta = pending
            acked = False
            for _ in range(rnd.randint(1, 3)):  # the provider sends some events more than once
                base = self.service.base
                t = int(self.service.now.timestamp())
                mac = hmac.new(WHSEC.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
                status, answer = call(base, "POST", f"/webhooks/stripe/{self.public}", raw=body.encode(),
                                      headers={"stripe-signature": f"t={t},v1={mac}"})
                if status == 200:
                    action = answer["data"]["action"]
                    with self.lock:
                        seen = event_id in self.provider_events
                        self.provider_events[event_id] = meta
                    if seen and action != "duplicate":
                        self.violation(f"provider: event {event_id} acknowledged before answered {action} again")
                    acked = True
            if not acked:
                with self.lock:
                    self.unacked_events.append((event_id, body, meta))

    def cancel_flow(self, stop, rnd):
        while not stop.is_set():
            n = self.next_n()
            who, sub = f"cf{n}@killtest.example", f"sub_kt_{n}"
            with self.fake.lock:
                self.fake.subscriptions[sub] = who
            kind = rnd.choice(["discount", "pause", None])
            reason = {"discount": "too_expensive", "pause": "dont_need_anymore", None: "too_expensive"}[kind]
            mac = hmac.new(self.identity.strip().encode(), f"{who}|{sub}".encode(), hashlib.sha256).hexdigest()
            doc = {"customer_email": who, "reason": reason, "offer_accepted": kind is not None,
                   "provider_subscription_id": sub, "customer_hash": mac}
            status, body = call(self.service.base, "POST", "/cancel-flow/reasons", doc,
                                headers={"x-public-key": self.public})
            if status == 201:
                with self.lock:
                    self.cancel_events[body["data"]["churn_event_id"]] = (who, sub, kind)
            elif status is not None and status >= 400 and status < 500:
                self.violation(f"cancel-flow: refused {status} {body}")
            time.sleep(0.05)

    def churn(self, stop, rnd):
        while not stop.is_set():
            n = self.next_n()
            who = f"ap{n}@killtest.example"
            status, body = call(self.service.base, "POST", f"/projects/{SLUG}/churn-events",
                                {"customer_email": who, "event_type": "cancellation", "mrr": 4900}, key=self.secret)
            if status == 201:
                with self.lock:
                    self.churn_events[body["data"]["id"]] = who
            time.sleep(0.05)

    def recompute(self, stop, rnd):
        while not stop.is_set():
            status, body = call(self.service.base, "POST", f"/projects/{SLUG}/churn-risk/recompute", key=self.secret,
                                timeout=60)
            if status == 200:
                with self.lock:
                    self.recomputes += 1
                    self.alerts_raised += body["data"]["alerts"]
            time.sleep(0.3)

    def jobs(self, stop, rnd):
        """An hour on at the start of the load, so that the next dunning step of every record
        falls due while the kill may come; then due jobs run, as the worker also does."""
        s = self.service
        now = s.now + datetime.timedelta(seconds=3601)
        s.now = now
        if call(s.base, "POST", "/dev/clock", {"set": iso(now)})[0] != 200:
            return
        while not stop.is_set():
            call(s.base, "POST", "/dev/jobs/run", timeout=60)
            time.sleep(rnd.uniform(0.05, 0.3))

    # --- settling and checks ---
    def settle(self):
        """Due jobs until none is left, moving the clock past every retry wait and lease a
        kill may have left."""
        s = self.service
        try:
            s.advance(61)
            quiet = 0
            self.settle_runs = []
            for _ in range(30):
                t = time.time()
                ran = s.run_jobs()
                self.settle_runs.append((ran, round(time.time() - t, 1)))
                quiet = quiet + 1 if ran == 0 else 0
                if quiet >= 2:
                    return
                s.advance(61)
            self.violation("settle: due jobs kept coming after 30 runs")
        except AssertionError as e:
            self.violation(f"settle: the restarted server answered {e}")

    def check(self, final=False):
        s, pid = self.service, self.project_id
        with self.lock:
            tracked = set(self.tracked)
            provider_events = dict(self.provider_events)
            cancel_events = dict(self.cancel_events)
            churn_events = dict(self.churn_events)
        counts = Counter()
        # Tracked events by id.
        stored = {r[0] for r in s.sql(f"SELECT id FROM behavior_events WHERE project_id = '{pid}' AND id LIKE 'kt-%'")}
        for i in tracked - stored:
            self.violation(f"lost: tracked event {i}")
        counts["tracked"] = len(tracked)
        # Provider events, one record and one churn event per invoice.
        seen = {r[0] for r in s.sql(f"SELECT event_id FROM provider_events WHERE project_id = '{pid}'")}
        records = Counter(r[0] for r in s.sql(f"SELECT reference FROM payment_failures WHERE project_id = '{pid}'"))
        churned = Counter(r[0] for r in s.sql(
            f"SELECT customer_email FROM churn_events WHERE project_id = '{pid}' AND event_type = 'payment_failed'"))
        for event_id, (invoice, payer) in provider_events.items():
            if event_id not in seen:
                self.violation(f"lost: provider event {event_id}")
            if records[invoice] != 1:
                self.violation(f"{'lost' if records[invoice] == 0 else 'twice'}: {records[invoice]} payment-failure records for {invoice}")
            if churned[payer] != 1:
                self.violation(f"{'lost' if churned[payer] == 0 else 'twice'}: {churned[payer]} payment_failed churn events for {payer}")
        for invoice, n in records.items():
            if n > 1:
                self.violation(f"twice: {n} payment-failure records for {invoice}")
        counts["provider_events"] = len(provider_events)
        # Dunning at the fake provider: no more pay calls than attempts recorded, one payment.
        attempts = Counter(r[0] for r in s.sql(
            "SELECT f.reference FROM payment_attempts a JOIN payment_failures f ON f.id = a.failure_id "
            f"WHERE f.project_id = '{pid}' AND a.outcome <> 'error'"))
        with self.fake.lock:
            pay_calls = {i: len(k) for i, k in self.fake.pay_calls.items()}
            paid = {i: list(k) for i, k in self.fake.paid.items()}
            coupons = list(self.fake.coupons)
            discounts = list(self.fake.discounts)
            pauses = list(self.fake.pauses)
            alerts = list(self.fake.alerts)
        for invoice, n in pay_calls.items():
            if n > attempts[invoice]:
                self.violation(f"twice: {n} pay calls (distinct idempotency keys) at the provider for {invoice}, "
                               f"{attempts[invoice]} attempts recorded")
        for invoice, keys in paid.items():
            if len(keys) > 1:
                self.violation(f"twice: invoice {invoice} paid {len(keys)} times ({keys})")
        counts["pay_calls"] = sum(pay_calls.values())
        counts["invoices_paid"] = sum(1 for keys in paid.values() if keys)
        # Offers at the fake provider: one coupon per churn event, one discount or pause per
        # subscription. (A discount email's coupon carries no churn event: its idempotency key,
        # one per variant, is what keeps it single.)
        for event_id, n in Counter(e for _, e in coupons if e).items():
            if n > 1:
                self.violation(f"twice: {n} coupons for churn event {event_id}")
        for what, effects in (("discount", discounts), ("pause", pauses)):
            for sub, n in Counter(sub for sub, _ in effects).items():
                if n > 1:
                    self.violation(f"twice: {n} {what}s on {sub}")
        coupon_events = {e for _, e in coupons}
        discounted = {sub for sub, _ in discounts}
        paused = {sub for sub, _ in pauses}
        rows = {r[0]: r[1:] for r in s.sql(
            f"SELECT id, status, COALESCE(offer_applied_at, ''), COALESCE(offer_error, ''), "
            f"COALESCE(autopilot_status, '') FROM churn_events WHERE project_id = '{pid}'")}
        for event_id, (who, sub, kind) in cancel_events.items():
            row = rows.get(event_id)
            if row is None:
                self.violation(f"lost: cancel-flow churn event {event_id}")
                continue
            if kind and row[0] != "recovered":
                self.violation(f"lost: cancel-flow event {event_id} accepted an offer and is {row[0]}")
            if kind == "discount" and (event_id not in coupon_events or sub not in discounted):
                self.violation(f"lost: the accepted discount of {event_id} never reached the provider ({row})")
            if kind == "pause" and sub not in paused:
                self.violation(f"lost: the accepted pause of {event_id} never reached the provider ({row})")
        counts["offers_accepted"] = sum(1 for *_, k in cancel_events.values() if k)
        counts["coupons"], counts["discounts"], counts["pauses"] = len(coupons), len(discounts), len(pauses)
        for event_id in churn_events:
            if event_id not in rows:
                self.violation(f"lost: churn event {event_id}")
        counts["churn_events"] = len(churn_events)
        # Emails: one per (recipient, subject) — one per job step — and one autopilot email per event.
        with self.smtp.lock:
            mail = list(self.smtp.mail)
        for (to, subject), n in Counter((to, subject) for to, subject, _ in mail).items():
            if n > 1:
                self.violation(f"twice: {n} emails to {to} with subject {subject!r}")
        per_recipient = Counter(to for to, _, _ in mail)
        autopilot_only = {who for who, *_ in cancel_events.values()} | set(churn_events.values())
        for who in autopilot_only:
            if per_recipient[who] > 1:
                self.violation(f"twice: {per_recipient[who]} autopilot emails to {who}")
        if per_recipient[OWNER] > 1:
            self.violation(f"twice: {per_recipient[OWNER]} account emails to the owner")
        counts["emails"] = len(mail)
        # Dunning emails whose job a kill interrupted between hand-over and completion: each
        # went out once, its job run again sent nothing (what the claim on the job row is for).
        counts["dunning_emails_unconfirmed"] = int(s.sql(
            "SELECT COUNT(*) FROM payment_emails e JOIN payment_failures f ON f.id = e.failure_id "
            f"WHERE f.project_id = '{pid}' AND e.reason LIKE 'unconfirmed%'")[0][0])
        sent_without_email = [e for e, (who, *_) in cancel_events.items()
                              if rows.get(e, ("",) * 4)[3] == "sent" and per_recipient[who] == 0]
        sent_without_email += [e for e, who in churn_events.items()
                               if rows.get(e, ("",) * 4)[3] == "sent" and per_recipient[who] == 0]
        counts["autopilot_sent_not_received"] = len(sent_without_email)  # at most once: a kill mid-hand-over
        # Alerts: delivered, and by one process at most once.
        logged = s.sql(f"SELECT opaque_id, status FROM risk_alerts WHERE project_id = '{pid}'")
        received = Counter(w for w, _ in alerts)
        for opaque_id, status in logged:
            if status not in ("delivered",):
                self.violation(f"lost: alert {opaque_id} is {status} after settling")
            elif received[opaque_id] == 0:
                self.violation(f"lost: alert {opaque_id} is delivered but never reached the receiver")
        for (w, g), n in Counter(alerts).items():
            if n > 1:
                self.violation(f"twice: alert {w} delivered {n} times by one process")
        counts["alerts"] = len(logged)
        counts["alert_deliveries"] = len(alerts)
        counts["alerts_redelivered_after_kill"] = sum(n - 1 for n in received.values() if n > 1)
        # A panic is a failure whatever else held.
        for path in s.logs:
            with open(path, errors="replace") as f:
                if "panicked" in f.read():
                    self.violation(f"the server panicked: {path}")
        return counts

    def kill(self):
        """kill -9; says which fakes were holding an answer back at that moment."""
        with HELD_LOCK:
            held = {k: n for k, n in HELD.items() if n}
        self.service.kill()
        for k in held:
            self.killed_holding[k] += 1
        return held

    def drain(self):
        s = self.service
        s.now += datetime.timedelta(seconds=61)
        if call(s.base, "POST", "/dev/clock", {"set": iso(s.now)})[0] == 200:
            call(s.base, "POST", "/dev/jobs/run", timeout=120)

    def self_check(self):
        """The checks see what they are for: after one cycle, a duplicate email, a second
        payment, a second coupon, a tracked event removed and an alert delivered twice by one
        process are planted; each must be reported."""
        s = self.service
        with self.smtp.lock:
            self.smtp.mail.append(self.smtp.mail[0])
        with self.fake.lock:
            invoice = "in_planted"
            self.fake.paid[invoice] += ["planted-1", "planted-2"]
            self.fake.coupons.append(next(c for c in self.fake.coupons if c[1]))
            self.fake.alerts.append(self.fake.alerts[0])
        gone = sorted(self.tracked)[0]
        s.sql(f"DELETE FROM behavior_events WHERE project_id = '{self.project_id}' AND id = '{gone}'")
        self.check()
        found, self.violations = self.violations, []
        expected = ["twice: 2 emails to", f"twice: invoice {invoice} paid 2 times", "twice: 2 coupons for churn event",
                    f"lost: tracked event {gone}", "delivered 2 times by one process"]
        missed = [e for e in expected if not any(e in v for v in found)]
        print(json.dumps({"self_check": "missed" if missed else "ok", "missed": missed, "reported": found[:10]}))
        return not missed

    # --- the cycles ---
    def run(self):
        args = self.args
        print(f"killtest: {args.backend}: seed {args.seed}, {args.cycles} cycles of {args.seconds} s, server {SERVER_BIN}",
              flush=True)
        passed = failed = kills = 0
        started = time.time()
        try:
            self.set_up()
            for cycle in range(1, args.cycles + 1):
                stop = threading.Event()
                threads = [threading.Thread(target=f, args=(stop, random.Random(f"{args.seed}-{cycle}-{f.__name__}")),
                                            daemon=True)
                           for f in (self.jobs, self.track, self.provider, self.cancel_flow, self.churn, self.recompute)]
                for t in threads:
                    t.start()
                time.sleep(self.rnd.uniform(0.2, 1.0) * args.seconds)
                held = self.kill()
                kills += 1
                stop.set()
                for t in threads:
                    t.join()
                t0 = time.time()
                self.service.start()
                if self.rnd.random() < 0.5:
                    # A second kill while the restarted server drains the due jobs: dunning and
                    # autopilot emails, alert deliveries and offers left by the load.
                    drain = threading.Thread(target=self.drain, daemon=True)
                    drain.start()
                    time.sleep(self.rnd.uniform(0.1, 2.0))
                    for k, n in self.kill().items():
                        held[k] = held.get(k, 0) + n
                    kills += 1
                    drain.join()
                    self.service.start()
                t1 = time.time()
                self.settle()
                t2 = time.time()
                counts = self.check()
                counts["seconds"] = {"restart": round(t1 - t0, 1), "settle": round(t2 - t1, 1),
                                     "check": round(time.time() - t2, 1), "jobs_runs": self.settle_runs}
                violations, self.violations = self.violations, []
                if violations:
                    failed += 1
                else:
                    passed += 1
                print(json.dumps({"backend": args.backend, "cycle": cycle, "ok": not violations,
                                  "killed_while_held": held, **counts,
                                  "violations": violations[:20]}), flush=True)
                if violations and args.stop_on_failure:
                    break
            if args.self_check:
                if not self.self_check():
                    failed += 1
                return failed == 0
            # One clean restart more: nothing may change.
            self.service.stop()
            self.service.start()
            self.settle()
            self.check()
            if self.violations:
                failed += 1
                print(json.dumps({"backend": args.backend, "cycle": "after a clean restart", "violations": self.violations[:20]}))
        finally:
            if failed and args.keep:
                print(f"killtest: kept {self.work}", file=sys.stderr)
                self.service.stop()
            else:
                self.service.cleanup()
                shutil.rmtree(self.work, ignore_errors=True)
        print(f"killtest: {args.backend}: {passed} passed, {failed} failed ({round(time.time() - started)} s, "
              f"{kills} kills, of which with an answer held back by the fake: "
              f"{dict(self.killed_holding) or 'none'}; {self.recomputes} recomputes, seed {args.seed})", flush=True)
        return failed == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0, help="load per cycle; the kill falls in it")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, database) on failure")
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument("--self-check", action="store_true",
                        help="after the cycles, plant a violation of each kind and fail unless all are reported")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 31)
    if not os.path.exists(SERVER_BIN):
        sys.exit(f"{SERVER_BIN} is missing: cargo build -p churn-server --bins")
    sys.exit(0 if KillTest(args).run() else 1)


if __name__ == "__main__":
    main()
