"""The client: one payment under Idempotency-Key K1, as a caller that retries does.

It reads the server's port from the file the server wrote, POSTs once and prints what came
back. A reply that never came (the server died mid-request) is printed too and is no failure:
the caller does not know whether it paid, so it retries with the same key later.
"""
import http.client
import sys

with open(sys.argv[1]) as f:
    port = int(f.read())
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
try:
    conn.request("POST", "/payments", body='{"amount": 25}',
                 headers={"Idempotency-Key": '"K1"', "Content-Type": "application/json"})
    reply = conn.getresponse()
    print(reply.status, reply.read(4096).decode("utf-8", "replace"))
except (OSError, http.client.HTTPException) as e:
    print("no reply:", e)
