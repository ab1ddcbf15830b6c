"""The consumer: takes each message from the queue, applies it once (Inbox + ledger in one
transaction), then acks it. A message it took and did not ack goes back to the queue when
the consumer dies, redelivered.

Design ack-before-apply acks first: a crash between the two loses the effect.
"""
import os
import sqlite3
import sys

import pika

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

url, queue = sys.argv[1], sys.argv[2]
store = sqlite3.connect(sys.argv[3], isolation_level=None)
app = sqlite3.connect(sys.argv[4], isolation_level=None)
design = sys.argv[5]

connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.queue_declare(queue=queue, durable=True)


def apply(msg_id, order_id):
    (amount,) = app.execute("SELECT amount FROM orders WHERE id = ?", (order_id,)).fetchone()
    store.execute("BEGIN IMMEDIATE")
    if store.execute("INSERT OR IGNORE INTO inbox VALUES (?)", (msg_id,)).rowcount == 1:
        store.execute("INSERT INTO ledger VALUES (?, ?)", (order_id, amount))
    store.execute("COMMIT")
    point("consumer.after-apply")


def ack(tag):
    channel.basic_ack(delivery_tag=tag)
    # An ack has no answer: a passive declare on the same channel does, and the broker
    # answers it only after it took the ack.
    channel.queue_declare(queue=queue, passive=True)
    point("consumer.after-ack")


# A bounded loop: a queue of a few messages, each taken at most a few times.
for _ in range(1000):
    method, properties, body = channel.basic_get(queue=queue, auto_ack=False)
    if method is None:
        break
    msg_id, order_id = properties.message_id, body.decode()
    if design == "ack-before-apply":
        ack(method.delivery_tag)
        apply(msg_id, order_id)
    else:
        apply(msg_id, order_id)
        ack(method.delivery_tag)
connection.close()
