#!/usr/bin/env python3
"""A payments endpoint with an Idempotency-Key, on Python's standard library only
(http.server and sqlite3): the service `crashlab probe` is pointed at in docs/probe.md.

    POST /payments          Idempotency-Key: "<key>" (the draft's quoted String), a JSON body
                            -> 201 {"payment": N, ...}; the same key and body again: the stored
                            answer; the same key, another body: 422; no key or a bad one: 400
    GET  /payments?key=K    the payments made under key K, a JSON list
    GET  /health            200

Every payment is a row of `payments` in the SQLite file --db. The key, a digest of the body
and the stored answer are rows of `idempotency`. Before it records a payment the handler
calls the payment provider, which takes --provider-ms (a real provider takes tens to
hundreds of milliseconds).

--bug key-after-effect switches on a common bug: the key is looked up first, the payment is
committed in one transaction and the key with its answer in a second one after it. A
duplicate that arrives while the first request is still at the provider finds no key and
pays again. Without the switch, the lookup, the payment and the key commit in one
transaction (BEGIN IMMEDIATE), so a duplicate waits for it and gets the stored answer.
"""

import argparse
import contextlib
import hashlib
import http.server
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

# The point protocol's client (docs/own-system.md): under crashlab a point is announced, and
# crashed at when armed; elsewhere it does nothing.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

BODY_BYTES_MAX = 64 * 1024
KEY_CHARS_MAX = 255
SCHEMA = """
CREATE TABLE IF NOT EXISTS payments(
    id INTEGER PRIMARY KEY, idem_key TEXT NOT NULL, body TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency(
    key TEXT PRIMARY KEY, body_sha256 TEXT NOT NULL, status INTEGER NOT NULL, answer TEXT NOT NULL);
"""


def sf_string(value):
    """The key of an Idempotency-Key value: an RFC 8941 String ("...", printable ASCII,
    \\" and \\\\ escaped), or None when the value is no such String."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return None
    out, escaped = [], False
    for c in value[1:-1]:
        if not " " <= c <= "~":
            return None
        if escaped:
            if c not in '"\\':
                return None
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            return None
        else:
            out.append(c)
    key = "".join(out)
    return key if not escaped and 1 <= len(key) <= KEY_CHARS_MAX else None


class Handler(http.server.BaseHTTPRequestHandler):
    # A client that stops sending is dropped after this many seconds.
    timeout = 10

    def db(self):
        """A connection of this request's own, closed when the request is done."""
        conn = sqlite3.connect(self.server.db_path, timeout=30, isolation_level=None)
        return contextlib.closing(conn)

    def answer(self, status, document, content_type="application/json"):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def problem(self, status, title, detail):
        self.answer(status, {"type": "about:blank", "title": title, "status": status,
                             "detail": detail}, "application/problem+json")

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/health":
            return self.answer(200, {"ok": True})
        if url.path != "/payments":
            return self.problem(404, "not found", "GET /payments?key=K or /health")
        key = parse_qs(url.query).get("key", [""])[0]
        with self.db() as conn:
            rows = conn.execute("SELECT id, body FROM payments WHERE idem_key = ? ORDER BY id",
                                (key,)).fetchall()
        self.answer(200, [{"payment": i, "body": b} for i, b in rows])

    def do_POST(self):
        if urlsplit(self.path).path != "/payments":
            return self.problem(404, "not found", "POST /payments")
        values = self.headers.get_all("Idempotency-Key") or []
        if not values:
            return self.problem(400, "Idempotency-Key is missing",
                                "POST /payments requires an Idempotency-Key header")
        key = sf_string(values[0]) if len(values) == 1 else None
        if key is None:
            return self.problem(400, "Idempotency-Key is malformed",
                                "one Idempotency-Key, a quoted String of 1 to 255 printable ASCII characters")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self.problem(411, "length required", "send a Content-Length")
        if not 0 <= length <= BODY_BYTES_MAX:
            self.close_connection = True
            return self.problem(413, "content too large", f"at most {BODY_BYTES_MAX} bytes")
        body = self.rfile.read(length).decode("utf-8", "replace")
        digest = hashlib.sha256(body.encode()).hexdigest()
        pay = self.pay_with_bug if self.server.bug else self.pay
        status, document = pay(key, body, digest)
        if status >= 400:
            return self.problem(status, document["title"], document["detail"])
        self.answer(status, document)

    def provider(self):
        time.sleep(self.server.provider_ms / 1000)

    def stored(self, row, digest):
        if row[0] != digest:
            return 422, {"title": "Idempotency-Key is already used",
                         "detail": "this key was used with another body; nothing was paid"}
        return row[1], json.loads(row[2])

    def pay(self, key, body, digest):
        """The lookup, the payment and the key with its answer: one transaction."""
        with self.db() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT body_sha256, status, answer FROM idempotency WHERE key = ?",
                                   (key,)).fetchone()
                if row:
                    conn.execute("ROLLBACK")
                    return self.stored(row, digest)
                self.provider()
                cur = conn.execute("INSERT INTO payments(idem_key, body, created_ms) VALUES (?, ?, ?)",
                                   (key, body, int(time.time() * 1000)))
                document = {"payment": cur.lastrowid, "status": "captured"}
                conn.execute("INSERT INTO idempotency VALUES (?, ?, 201, ?)",
                             (key, digest, json.dumps(document)))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        point("server.after-payment")
        return 201, document

    def pay_with_bug(self, key, body, digest):
        """--bug key-after-effect: look up, pay (commit), then store the key (commit)."""
        with self.db() as conn:
            row = conn.execute("SELECT body_sha256, status, answer FROM idempotency WHERE key = ?",
                               (key,)).fetchone()
            if row:
                return self.stored(row, digest)
            self.provider()
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute("INSERT INTO payments(idem_key, body, created_ms) VALUES (?, ?, ?)",
                               (key, body, int(time.time() * 1000)))
            conn.execute("COMMIT")
            point("server.after-payment")
            document = {"payment": cur.lastrowid, "status": "captured"}
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR REPLACE INTO idempotency VALUES (?, ?, 201, ?)",
                         (key, digest, json.dumps(document)))
            conn.execute("COMMIT")
        return 201, document


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="the SQLite file (created when missing)")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--bug", choices=["key-after-effect"], help="switch on the bug")
    parser.add_argument("--provider-ms", type=int, default=100, help="the provider's delay")
    parser.add_argument("--lifetime-s", type=int, default=600, help="stop by itself after this")
    args = parser.parse_args()
    with sqlite3.connect(args.db) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(SCHEMA)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.db_path, server.bug, server.provider_ms = args.db, args.bug, args.provider_ms
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    lifetime = threading.Timer(args.lifetime_s, stop)
    lifetime.daemon = True
    lifetime.start()
    point("server.listening")
    print(f"READY {port} bug={args.bug or 'none'}", flush=True)
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
