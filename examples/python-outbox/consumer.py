"""The consumer: applies each message once (Inbox + ledger in one transaction), then acks.

Design ack-before-apply acks first: a crash between the two loses the effect.
"""
import os
import sqlite3
import sys

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

broker = sqlite3.connect(sys.argv[1], isolation_level=None)
store = sqlite3.connect(sys.argv[2], isolation_level=None)
app = sqlite3.connect(sys.argv[3], isolation_level=None)
design = sys.argv[4]


def apply(msg_id, order_id):
    (amount,) = app.execute("SELECT amount FROM orders WHERE id = ?", (order_id,)).fetchone()
    store.execute("BEGIN IMMEDIATE")
    if store.execute("INSERT OR IGNORE INTO inbox VALUES (?)", (msg_id,)).rowcount == 1:
        store.execute("INSERT INTO ledger VALUES (?, ?)", (order_id, amount))
    store.execute("COMMIT")
    point("consumer.after-apply")


def ack(seq):
    broker.execute("UPDATE queue SET acked = 1 WHERE seq = ?", (seq,))
    point("consumer.after-ack")


rows = broker.execute("SELECT seq, msg_id, order_id FROM queue WHERE acked = 0 ORDER BY seq")
for seq, msg_id, order_id in rows.fetchall():
    if design == "ack-before-apply":
        ack(seq)
        apply(msg_id, order_id)
    else:
        apply(msg_id, order_id)
        ack(seq)
