#!/bin/sh
# The consumer: each message not acked yet is applied, then acked. Design inbox applies it in
# one transaction with its Inbox row, and only if the Inbox has no row for it; design no-inbox
# applies it whatever came before.
set -eu
broker=$1 consumer=$2 crashlab=$3 design=$4

messages=$(sqlite3 "$broker" "SELECT id || ' ' || amount FROM queue WHERE acked = 0 ORDER BY id")
# A for loop, not `| while read`: a point's `exit` must end this script, not a subshell.
for id in $(printf '%s\n' "$messages" | cut -d' ' -f1); do
  amount=$(printf '%s\n' "$messages" | grep "^$id " | cut -d' ' -f2)
  if [ "$design" = inbox ]; then
    sqlite3 "$consumer" "BEGIN IMMEDIATE;
      INSERT INTO ledger SELECT '$id', $amount WHERE NOT EXISTS (SELECT 1 FROM inbox WHERE msg_id = '$id');
      INSERT OR IGNORE INTO inbox VALUES ('$id');
      COMMIT;"
  else
    sqlite3 "$consumer" "INSERT INTO ledger VALUES ('$id', $amount)"
  fi
  "$crashlab" point consumer.after-apply || exit $?
  sqlite3 "$broker" "UPDATE queue SET acked = 1 WHERE id = '$id'"
  "$crashlab" point consumer.after-ack || exit $?
done
