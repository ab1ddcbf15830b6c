//! Passwords out of what crashlab prints and records: a server URL the user gave may hold
//! one, and messages and evidence are shared.

/// A URL as it may be printed or recorded: its password replaced by `***`, wherever a
/// connection string can carry one (`user:pw@`, `?password=pw`, `password=pw` of a
/// key=value string).
pub fn redact(url: &str) -> String {
    redact_password_values(&redact_userinfo(url))
}

fn redact_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Every `password=VALUE` (any case) with its value, up to `&`, `;` or white space, or a
/// quoted value whole, replaced by `***`.
fn redact_password_values(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(KEY) {
        let value_start = at + found + KEY.len();
        out.push_str(&text[at..value_start]);
        out.push_str("***");
        let rest = &text[value_start..];
        let value_len = match rest.chars().next() {
            Some(q @ ('\'' | '"')) => rest[1..].find(q).map_or(rest.len(), |end| end + 2),
            _ => rest
                .find(|c: char| c == '&' || c == ';' || c.is_whitespace())
                .unwrap_or(rest.len()),
        };
        at = value_start + value_len;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_printed() {
        assert_eq!(
            redact("postgres://u:secret@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://u@h:1/x?sslmode=disable&password=TOP&a=b"),
            "postgres://u@h:1/x?sslmode=disable&password=***&a=b"
        );
        assert_eq!(
            redact("host=h port=1 user=u PASSWORD=TOP dbname=x"),
            "host=h port=1 user=u PASSWORD=*** dbname=x"
        );
        assert_eq!(
            redact("host=h password='a b' dbname=x"),
            "host=h password=*** dbname=x"
        );
        assert_eq!(redact("amqp://g:pw@h:5/%2f"), "amqp://g:***@h:5/%2f");
    }
}
