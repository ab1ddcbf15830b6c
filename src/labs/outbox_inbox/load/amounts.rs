//! The amounts in a lab 14 load run's logs: every contract's amount, wherever a statement carries
//! it, is the one the run's seed gives that contract (rng::amounts, as the sender drew them),
//! and a row that names a message and its contract names the pair the sender made
//! (`M000042` with `C000042`).

/// Every contract's amount in a log (`'C000042', 33` in SQL, `"amount":33,"contract":"C000042"`
/// in a payload) must be the seed's, and every contract id within the run's count.
pub fn seeded_amounts(stdout: &str, amounts: &[i64]) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, line) in stdout.lines().enumerate() {
        if !line.starts_with("SQL ") {
            continue;
        }
        for (id, amount) in sql_pairs(line).into_iter().chain(payload_pairs(line)) {
            let expected = id.checked_sub(1).and_then(|i| amounts.get(i as usize));
            match expected {
                None => problems.push(format!(
                    "line {}: contract C{id:06} is beyond the run's {}",
                    index + 1,
                    amounts.len()
                )),
                Some(a) if *a != amount => problems.push(format!(
                    "line {}: contract C{id:06} with amount {amount}, the seed gives {a}",
                    index + 1
                )),
                _ => {}
            }
        }
        if let Some(problem) = payload_problem(line) {
            problems.push(format!("line {}: {problem}", index + 1));
        }
        for (message, contract) in message_pairs(line) {
            if message != contract {
                problems.push(format!(
                    "line {}: message M{message:06} with contract C{contract:06}; the sender pairs each message with its own contract",
                    index + 1
                ));
            }
        }
    }
    problems
}

/// A queue row's payload is the publisher's JSON for its own message: exactly `amount`,
/// `contract` and `message`, the message being the row's.
fn payload_problem(line: &str) -> Option<String> {
    let values = line
        .strip_prefix("SQL queue INSERT INTO deliveries(message_id, payload, ")?
        .split_once("VALUES ('")?
        .1;
    let (message, rest) = values.split_once("', '")?;
    let payload = rest.split("}', ").next()?.to_string() + "}";
    let parsed: serde_json::Value = match serde_json::from_str(&payload) {
        Ok(v) => v,
        Err(_) => return Some(format!("the payload of {message} is not JSON")),
    };
    let keys: Vec<&String> = parsed
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    let well_formed = keys.len() == 3
        && parsed["amount"].is_i64()
        && parsed["contract"].is_string()
        && parsed["message"].as_str() == Some(message);
    (!well_formed).then(|| {
        format!("the payload of {message} is not {{amount, contract, message}} for that message")
    })
}

/// The six digits after `prefix` at the start of `text`.
fn id_after(text: &str, prefix: &str) -> Option<u64> {
    let rest = text.strip_prefix(prefix)?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (digits.len() == 6).then(|| digits.parse().ok()).flatten()
}

/// (message, contract) of each row a statement writes that names both: a VALUES tuple that
/// starts with `'M…'` and names a `'C…'`, and a payload's `"contract":"C…","message":"M…"`.
fn message_pairs(line: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut rest = line;
    // Bounded by the line: each round moves past the marker it found.
    while let Some(at) = rest.find("('M") {
        rest = &rest[at + 1..];
        let tuple = rest.split(')').next().unwrap_or("");
        let message = id_after(tuple, "'M");
        let contract = tuple.find("'C").and_then(|c| id_after(&tuple[c..], "'C"));
        if let (Some(m), Some(c)) = (message, contract) {
            out.push((m, c));
        }
    }
    let mut rest = line;
    while let Some(at) = rest.find("\"contract\":\"") {
        rest = &rest[at + "\"contract\":".len()..];
        let contract = id_after(rest, "\"C");
        let message = rest
            .find("\"message\":")
            .and_then(|m| id_after(&rest[m + "\"message\":".len()..], "\"M"));
        if let (Some(m), Some(c)) = (message, contract) {
            out.push((m, c));
        }
    }
    out
}

/// `'C000042', 33`: a contract id followed by its amount in a VALUES list.
fn sql_pairs(line: &str) -> Vec<(u64, i64)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("'C") {
        rest = &rest[at + 2..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.len() != 6 {
            continue;
        }
        let after = &rest[6..];
        let Some(tail) = after.strip_prefix("', ") else {
            continue;
        };
        let number: String = tail
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        if let (Ok(id), Ok(amount)) = (digits.parse(), number.parse()) {
            out.push((id, amount));
        }
    }
    out
}

/// `"amount":33,"contract":"C000042"`: a payload's amount and contract.
fn payload_pairs(line: &str) -> Vec<(u64, i64)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("{\"amount\":") {
        rest = &rest[at + "{\"amount\":".len()..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        let tail = &rest[number.len()..];
        let Some(tail) = tail.strip_prefix(",\"contract\":\"C") else {
            continue;
        };
        let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let (Ok(id), Ok(amount)) = (digits.parse(), number.parse()) {
            out.push((id, amount));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{message_pairs, payload_pairs, seeded_amounts, sql_pairs};

    #[test]
    fn amounts_are_found_in_sql_and_payloads() {
        let line = "SQL sender INSERT INTO contracts(contract_id, amount) VALUES ('C000021', 19)";
        assert_eq!(sql_pairs(line), [(21, 19)]);
        let line = r#"SQL queue INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES ('M000021', '{"amount":19,"contract":"C000021","message":"M000021"}', 'pending', 1)"#;
        assert_eq!(payload_pairs(line), [(21, 19)]);
        assert!(sql_pairs(line).is_empty());
        let amounts = [5, 19];
        assert!(seeded_amounts("SQL sender X ('C000002', 19)\n", &amounts).is_empty());
        assert_eq!(
            seeded_amounts("SQL sender X ('C000002', 20)\n", &amounts).len(),
            1
        );
        assert_eq!(
            seeded_amounts("SQL sender X ('C000003', 20)\n", &amounts).len(),
            1
        );
        let outbox = "SQL sender INSERT INTO outbox(message_id, contract_id, amount, status) VALUES ('M000002', 'C000002', 19, 'pending')";
        assert_eq!(message_pairs(outbox), [(2, 2)]);
        let swapped = outbox.replace("'M000002'", "'M000001'");
        assert_eq!(seeded_amounts(&swapped, &amounts).len(), 1);
        let payload = r#"SQL queue INSERT INTO deliveries(message_id, payload, status, enqueued_ms) VALUES ('M000002', '{"amount":19,"contract":"C000002","message":"M000002"}', 'pending', 1)"#;
        assert_eq!(message_pairs(payload), [(2, 2)]);
        assert_eq!(
            message_pairs(&payload.replace("\"M000002\"", "\"M000003\"")),
            [(3, 2)]
        );
    }
}
