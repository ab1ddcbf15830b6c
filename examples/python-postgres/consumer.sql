-- The consumer's store: the Inbox (message ids seen) and the ledger (the effect), one transaction.
CREATE TABLE inbox (msg_id text PRIMARY KEY);
CREATE TABLE ledger (order_id text NOT NULL, amount integer NOT NULL);
