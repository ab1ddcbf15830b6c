CREATE TABLE queue (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, acked INTEGER NOT NULL DEFAULT 0);
INSERT INTO queue (id, amount) VALUES ('m1', 10), ('m2', 20), ('m3', 30);
