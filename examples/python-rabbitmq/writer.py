"""The writer: each order and its Outbox row in one transaction."""
import os
import sqlite3
import sys

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

app = sqlite3.connect(sys.argv[1], isolation_level=None)
for n, amount in ((1, 25), (2, 40)):
    app.execute("BEGIN IMMEDIATE")
    app.execute("INSERT INTO orders VALUES (?, ?)", (f"O{n}", amount))
    app.execute("INSERT INTO outbox (id, order_id) VALUES (?, ?)", (f"M{n}", f"O{n}"))
    app.execute("COMMIT")
    point("writer.after-commit")
