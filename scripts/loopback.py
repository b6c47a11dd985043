"""Loopback fakes for scripts/killtest.py and the benchmarks (standard library only): an SMTP
server that accepts every message, and the JSON answers of a fake HTTP API."""

import http.server
import json
import socketserver
import threading


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A fake API's request handler: quiet, and `answer` sends one JSON document."""

    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes: without TCP_NODELAY the body waits for the
    # client's delayed ACK (40 ms on Linux) and the fake, not churn, sets the pace.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class SmtpSink:
    """Keeps `record(raw message)` of each complete message in `mail` (under `lock`), then
    calls `hold()` before answering 250: a kill in that window leaves an email delivered that
    its sender never heard accepted. A message cut off before its end is not accepted."""

    def __init__(self, record, hold=lambda: None, name="sink.churn"):
        self.mail = []
        self.lock = threading.Lock()
        sink = self

        class Session(socketserver.StreamRequestHandler):
            def handle(self):
                try:
                    self.converse()
                except OSError:
                    pass  # the server was killed mid-session

            def converse(self):
                self.wfile.write(b"220 " + name.encode() + b" ESMTP\r\n")
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    verb = line[:4].upper()
                    if verb == b"DATA":
                        self.wfile.write(b"354 go ahead\r\n")
                        lines = []
                        while True:
                            data = self.rfile.readline()
                            if not data or data in (b".\r\n", b".\n"):
                                break
                            lines.append(data[1:] if data.startswith(b"..") else data)
                        if not data:
                            return
                        entry = record(b"".join(lines))
                        with sink.lock:
                            sink.mail.append(entry)
                        hold()
                        self.wfile.write(b"250 queued\r\n")
                    elif verb == b"QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    elif verb in (b"EHLO", b"HELO"):
                        self.wfile.write(b"250 " + name.encode() + b"\r\n")
                    else:
                        self.wfile.write(b"250 ok\r\n")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Session)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
