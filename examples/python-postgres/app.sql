-- The business store: an order and its Outbox row are written in one transaction.
CREATE TABLE orders (id text PRIMARY KEY, amount integer NOT NULL);
CREATE TABLE outbox (id text PRIMARY KEY, order_id text NOT NULL, sent boolean NOT NULL DEFAULT false);
