"""The writer: each order and its Outbox row in one PostgreSQL transaction."""
import os
import sys

import psycopg2

# The point protocol's client, one file: copy it beside your code, or point sys.path at it.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from crashlab_point import point  # noqa: E402

app = psycopg2.connect(sys.argv[1])
for n, amount in ((1, 25), (2, 40)):
    with app.cursor() as cur:
        cur.execute("INSERT INTO orders VALUES (%s, %s)", (f"O{n}", amount))
        cur.execute("INSERT INTO outbox (id, order_id) VALUES (%s, %s)", (f"M{n}", f"O{n}"))
    app.commit()
    point("writer.after-commit")
