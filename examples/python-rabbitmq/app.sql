-- The business store: an order and its Outbox row are written in one transaction.
CREATE TABLE orders (id TEXT PRIMARY KEY, amount INTEGER NOT NULL);
CREATE TABLE outbox (id TEXT PRIMARY KEY, order_id TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0);
