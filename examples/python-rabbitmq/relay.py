"""The relay: publishes each unsent Outbox row to the queue (persistent, with publisher
confirms), then marks it sent.

Design mark-before-publish marks first: a crash between the two loses the message.
"""
import os
import sqlite3
import sys

import pika

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

app = sqlite3.connect(sys.argv[1], isolation_level=None)
url, queue, design = sys.argv[2], sys.argv[3], sys.argv[4]

connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.queue_declare(queue=queue, durable=True)
# basic_publish returns once the broker confirmed the message (raises when it refuses it).
channel.confirm_delivery()


def publish(msg_id, order_id):
    properties = pika.BasicProperties(message_id=msg_id, delivery_mode=2)
    channel.basic_publish(exchange="", routing_key=queue, body=order_id, properties=properties)
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
connection.close()
