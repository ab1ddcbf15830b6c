"""The relay: copies unsent Outbox rows into the queue, then marks them sent.

Design mark-before-publish marks first: a crash between the two writes loses the message.
"""
import os
import sqlite3
import sys

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

app = sqlite3.connect(sys.argv[1], isolation_level=None)
broker = sqlite3.connect(sys.argv[2], isolation_level=None)
design = sys.argv[3]


def publish(msg_id, order_id):
    broker.execute("INSERT INTO queue (msg_id, order_id) VALUES (?, ?)", (msg_id, order_id))
    point("relay.after-publish")


def mark(msg_id):
    app.execute("UPDATE outbox SET sent = 1 WHERE id = ?", (msg_id,))
    point("relay.after-mark")


rows = app.execute("SELECT id, order_id FROM outbox WHERE sent = 0 ORDER BY id").fetchall()
for msg_id, order_id in rows:
    if design == "mark-before-publish":
        mark(msg_id)
        publish(msg_id, order_id)
    else:
        publish(msg_id, order_id)
        mark(msg_id)
