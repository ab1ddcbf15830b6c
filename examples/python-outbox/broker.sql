-- The queue, a durable table standing in for a broker: at-least-once, a message may come twice.
CREATE TABLE queue (seq INTEGER PRIMARY KEY, msg_id TEXT NOT NULL, order_id TEXT NOT NULL, acked INTEGER NOT NULL DEFAULT 0);
