-- The consumer's store: the Inbox (message ids seen) and the ledger (the effect), one transaction.
CREATE TABLE inbox (msg_id TEXT PRIMARY KEY);
CREATE TABLE ledger (order_id TEXT NOT NULL, amount INTEGER NOT NULL);
