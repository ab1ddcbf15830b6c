-- The server's tables (it creates them too, when missing): payments, and each key's answer.
CREATE TABLE IF NOT EXISTS payments(
    id INTEGER PRIMARY KEY, idem_key TEXT NOT NULL, body TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency(
    key TEXT PRIMARY KEY, body_sha256 TEXT NOT NULL, status INTEGER NOT NULL, answer TEXT NOT NULL);
