"""The consumer: applies each message once (Inbox + ledger in one transaction), then acks.

Design ack-before-apply acks first: a crash between the two loses the effect.
"""
import os
import sys

import psycopg2

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

broker = psycopg2.connect(sys.argv[1])
store = psycopg2.connect(sys.argv[2])
app = psycopg2.connect(sys.argv[3])
design = sys.argv[4]


def apply(msg_id, order_id):
    with app.cursor() as cur:
        cur.execute("SELECT amount FROM orders WHERE id = %s", (order_id,))
        (amount,) = cur.fetchone()
    app.commit()
    with store.cursor() as cur:
        cur.execute("INSERT INTO inbox VALUES (%s) ON CONFLICT DO NOTHING", (msg_id,))
        if cur.rowcount == 1:
            cur.execute("INSERT INTO ledger VALUES (%s, %s)", (order_id, amount))
    store.commit()
    point("consumer.after-apply")


def ack(seq):
    with broker.cursor() as cur:
        cur.execute("UPDATE queue SET acked = true WHERE seq = %s", (seq,))
    broker.commit()
    point("consumer.after-ack")


with broker.cursor() as cur:
    cur.execute("SELECT seq, msg_id, order_id FROM queue WHERE NOT acked ORDER BY seq")
    rows = cur.fetchall()
broker.commit()
for seq, msg_id, order_id in rows:
    if design == "ack-before-apply":
        ack(seq)
        apply(msg_id, order_id)
    else:
        apply(msg_id, order_id)
        ack(seq)
