"""The relay: copies unsent Outbox rows into the queue, then marks them sent.

Design mark-before-publish marks first: a crash between the two commits loses the message.
"""
import os
import sys

import psycopg2

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

app = psycopg2.connect(sys.argv[1])
broker = psycopg2.connect(sys.argv[2])
design = sys.argv[3]


def publish(msg_id, order_id):
    with broker.cursor() as cur:
        cur.execute("INSERT INTO queue (msg_id, order_id) VALUES (%s, %s)", (msg_id, order_id))
    broker.commit()
    point("relay.after-publish")


def mark(msg_id):
    with app.cursor() as cur:
        cur.execute("UPDATE outbox SET sent = true WHERE id = %s", (msg_id,))
    app.commit()
    point("relay.after-mark")


with app.cursor() as cur:
    cur.execute("SELECT id, order_id FROM outbox WHERE NOT sent ORDER BY id")
    rows = cur.fetchall()
app.commit()
for msg_id, order_id in rows:
    if design == "mark-before-publish":
        mark(msg_id)
        publish(msg_id, order_id)
    else:
        publish(msg_id, order_id)
        mark(msg_id)
