#!/usr/bin/env python3
"""Helpers of bench/webhooks.sh (standard library only).

  sign     signed provider-A `invoice.payment_failed` deliveries, one per line:
           `<Stripe-Signature>\t<body>`, for webhook.lua to cycle through. Every event has its
           own id and invoice, so each one creates a payment-failure record.
  hashes   the customer_hash (decisions §16) of each email read from stdin, under an identity
           secret: `<email>\t<hash>` per line.
  provider a loopback fake of Stripe's API over HTTPS, answering invoice pay calls:
           3 in 10 paid, 1 in 10 a hard decline (expired_card), the rest a soft decline
           (insufficient_funds), by the invoice number; and the cancellation of a
           subscription (a dunning's final action); prints its port on stdout.
"""

import argparse
import datetime
import hashlib
import hmac
import http.server
import json
import re
import socketserver
import ssl
import sys
import os
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from loopback import JsonHandler  # noqa: E402


def sign(args):
    t = int(time.time())
    if args.now:
        t = int(datetime.datetime.fromisoformat(args.now.replace("Z", "+00:00")).timestamp())
    secret = args.secret.encode()
    with open(args.out, "w") as out:
        for n in range(args.start, args.start + args.count):
            body = json.dumps(
                {
                    "id": f"evt_bench_{n}",
                    "object": "event",
                    "type": "invoice.payment_failed",
                    "data": {
                        "object": {
                            "id": f"in_bench_{n}",
                            "object": "invoice",
                            "customer": f"cus_{n % 50000}",
                            "customer_email": f"payer{n % 50000}@example.com",
                            "amount_due": 1900 + n % 10000,
                            "currency": "usd",
                            "subscription": f"sub_{n % 50000}",
                            "hosted_invoice_url": f"https://invoice.example.com/i/{n}",
                        }
                    },
                },
                separators=(",", ":"),
            )
            mac = hmac.new(secret, f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
            out.write(f"t={t},v1={mac}\t{body}\n")


class Handler(JsonHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        m = re.fullmatch(r"/v1/invoices/([^/]+)/pay", self.path)
        if not m:
            return self.answer(404, {"error": {"type": "invalid_request_error", "message": "no such route"}})
        invoice = m.group(1)
        n = int(re.sub(r"\D", "", invoice) or 0)
        if n % 10 < 3:
            return self.answer(200, {"id": invoice, "object": "invoice", "status": "paid"})
        code = "expired_card" if n % 10 == 9 else "insufficient_funds"
        return self.answer(
            402,
            {"error": {"type": "card_error", "code": "card_declined", "decline_code": code,
                       "message": "Your card was declined."}},
        )

    def do_DELETE(self):
        m = re.fullmatch(r"/v1/subscriptions/([^/?]+)", self.path)
        if not m:
            return self.answer(404, {"error": {"type": "invalid_request_error", "message": "no such route"}})
        return self.answer(200, {"id": m.group(1), "object": "subscription", "status": "canceled"})

    def do_GET(self):
        m = re.fullmatch(r"/v1/customers/([^/]+)", self.path)
        if not m:
            return self.answer(404, {"error": {"type": "invalid_request_error", "message": "no such route"}})
        return self.answer(200, {"id": m.group(1), "object": "customer", "email": f"{m.group(1)}@example.com"})


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


def hashes(args):
    """`<email>\t<customer_hash>` per line (decisions §16: hex HMAC-SHA256 of the email)."""
    for line in sys.stdin:
        email = line.strip().lower()
        digest = hmac.new(args.secret.strip().encode(), email.encode(), hashlib.sha256).hexdigest()
        print(f"{email}\t{digest}")


def provider(args):
    server = Server(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sign")
    s.add_argument("--secret", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--start", type=int, default=0)
    s.add_argument("--out", required=True)
    s.add_argument("--now", help="the service clock's now (RFC 3339); default the wall clock")
    h = sub.add_parser("hashes", help="customer_hash of each email read from stdin, one a line")
    h.add_argument("--secret", required=True)
    p = sub.add_parser("provider")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    args = parser.parse_args()
    {"sign": sign, "provider": provider, "hashes": hashes}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
