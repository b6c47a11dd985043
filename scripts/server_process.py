"""A churn server process on one database, killed and restarted at will, and the JSON client
that calls it: shared by scripts/killtest.py and bench/sending.py (standard library only)."""

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request


def psql(url, command):
    subprocess.run(["psql", url, "-qc", command], check=True, capture_output=True)


class ServerProcess:
    """`binary` on a fresh database (a SQLite file in `work`, or a PostgreSQL database made
    under `pg_admin`, named after `prefix`), logging JSON lines to `work`/server-<n>.log.
    `env` adds to the settings every run takes: rate limits off and send quotas that do not
    cap the load. A subclass's `started(base)` runs once the server answers, before anyone
    else may call it."""

    def __init__(self, binary, backend, work, pg_admin, prefix, **env):
        self.binary = binary
        self.work = work
        self.pg_admin = pg_admin
        self.dbname = None
        if backend == "postgres":
            self.dbname = f"{prefix}_{os.getpid()}_{random.randrange(1 << 30)}"
            psql(pg_admin, f"CREATE DATABASE {self.dbname}")
            self.db = pg_admin.rsplit("/", 1)[0] + "/" + self.dbname
        else:
            self.db = f"sqlite://{work}/churn.db"
        self.env = dict(os.environ, CHURN_BIND="127.0.0.1:0", CHURN_DATABASE_URL=self.db,
                        CHURN_RATE_LIMITS="off", CHURN_LOG="warn,churn_server=info", CHURN_LOG_FORMAT="json",
                        CHURN_SEND_QUOTA_TRIAL="100000000", CHURN_SEND_QUOTA_PAID="100000000", **env)
        self.proc = None
        self.base = None
        self.logs = []

    def started(self, base):
        pass

    def start(self):
        path = os.path.join(self.work, f"server-{len(self.logs)}.log")
        self.logs.append(path)
        log = open(path, "wb")
        self.proc = subprocess.Popen([self.binary], env=self.env, stdout=log, stderr=log)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(path, "rb") as f:
                m = re.search(rb'"address":"([^"]+)"', f.read())
            if m:
                base = f"http://{m.group(1).decode()}/api/v1"
                self.started(base)
                self.base = base
                return
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited at start ({self.proc.returncode}):\n{open(path).read()[-3000:]}")
            time.sleep(0.02)
        raise SystemExit("server did not start")

    def kill(self):
        self.base = None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()

    def cleanup(self):
        self.stop()
        if self.dbname:
            psql(self.pg_admin, f"DROP DATABASE IF EXISTS {self.dbname} WITH (FORCE)")

    def sql(self, query):
        """The rows of `query`, each a tuple of strings ('' for NULL)."""
        if self.dbname:
            out = subprocess.run(["psql", self.db, "-AtF", "\t", "-c", query], check=True,
                                 capture_output=True, text=True).stdout
            return [tuple(line.split("\t")) for line in out.splitlines() if line]
        with sqlite3.connect(self.db.removeprefix("sqlite://"), timeout=30) as conn:
            return [tuple("" if v is None else str(v) for v in row) for row in conn.execute(query)]


def call(base, method, path, body=None, key=None, token=None, headers=None, raw=None, timeout=30):
    """(status, JSON body); status None when the server could not be reached or answered."""
    if base is None:
        return None, None
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if key:
        req.add_header("x-api-key", key)
    if token:
        req.add_header("authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
        return None, None
