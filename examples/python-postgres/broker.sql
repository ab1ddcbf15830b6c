-- The queue, a durable table standing in for a broker: at-least-once, a message may come twice.
CREATE TABLE queue (seq bigserial PRIMARY KEY, msg_id text NOT NULL, order_id text NOT NULL, acked boolean NOT NULL DEFAULT false);
