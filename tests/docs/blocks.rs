//! Reading the pages: fenced blocks, the commands a `sh` block shows, the exit each claims,
//! and the relative links. Pure text work; `tests/docs.rs` runs what this finds.

/// The info strings a fence may carry. Anything else, or none, is refused: an unlabelled
/// block could hold a command no test runs.
pub const INFOS: [&str; 3] = ["sh", "text", "mermaid"];

/// How a `text` line would begin if it were a command rather than output or a synopsis.
const COMMAND_STARTS: [&str; 8] = [
    "crashlab ",
    "target/release/crashlab ",
    "bash ",
    "cargo ",
    "sqlite3 ",
    "jq ",
    "grep ",
    "rm ",
];

/// At most this many lines in one block, this many blocks in one page: a bound on the
/// scan, far above what a page holds.
const BLOCK_LINES_MAX: usize = 2_000;
const BLOCKS_MAX: usize = 200;

#[derive(Debug, Clone)]
pub struct Block {
    pub page: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    pub info: String,
    /// The lines between the fences, each with its 1-based line number.
    pub body: Vec<(usize, String)>,
}

/// One command of a `sh` block: its text as typed (continuation lines joined by newlines,
/// so bash reads it as the reader's shell would) and the exit the page claims for it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub page: String,
    pub line: usize,
    pub text: String,
    pub exit_expected: i32,
}

impl Shown {
    pub fn at(&self) -> String {
        format!(
            "{}:{}: {}",
            self.page,
            self.line,
            self.text.replace("\\\n", " ")
        )
    }

    /// The first word of the command, which decides how it is covered.
    pub fn program(&self) -> &str {
        self.text.split_whitespace().next().unwrap_or("")
    }

    /// The command without its trailing comment, continuation lines joined.
    pub fn bare(&self) -> String {
        let joined = self.text.replace("\\\n", " ");
        let bare = match joined.find("  #") {
            Some(at) => &joined[..at],
            None => &joined[..],
        };
        bare.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Whether the command calls `tool` as a program anywhere in its pipeline.
    pub fn uses(&self, tool: &str) -> bool {
        self.bare()
            .split(['|', ';', '&'])
            .any(|segment| segment.split_whitespace().next() == Some(tool))
    }
}

/// Every fenced block of a page, in order. An opening fence without an allowed info string,
/// or a fence never closed, is an error naming the line.
pub fn blocks(page: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out: Vec<Block> = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => {
                    if !rest.trim().is_empty() {
                        return Err(format!("{page}:{number}: a closing fence carries `{rest}`"));
                    }
                    out.push(block);
                    if out.len() > BLOCKS_MAX {
                        return Err(format!("{page}: more than {BLOCKS_MAX} blocks"));
                    }
                }
                None => {
                    let info = rest.trim().to_string();
                    if !INFOS.contains(&info.as_str()) {
                        return Err(format!(
                            "{page}:{number}: a fence must say what it holds, one of {INFOS:?} (`sh` for commands, `text` for output, files and synopses); this one says {info:?}"
                        ));
                    }
                    open = Some(Block {
                        page: page.to_string(),
                        line: number,
                        info,
                        body: Vec::new(),
                    });
                }
            }
            continue;
        }
        if let Some(block) = open.as_mut() {
            if block.body.len() >= BLOCK_LINES_MAX {
                return Err(format!(
                    "{page}:{}: a block over {BLOCK_LINES_MAX} lines",
                    block.line
                ));
            }
            block.body.push((number, line.to_string()));
        }
    }
    match open {
        Some(block) => Err(format!("{page}:{}: a fence never closed", block.line)),
        None => Ok(out),
    }
}

/// The commands of a `sh` block. Every line is a command except empty lines and lines that
/// start with `#`; a line ending in `\` continues on the next. A trailing comment (two
/// spaces, then `#`) that starts with `exit N` or `exits N` claims the exit N; otherwise the
/// command must exit 0.
pub fn commands(block: &Block) -> Result<Vec<Shown>, String> {
    assert_eq!(block.info, "sh", "only a sh block holds commands");
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (number, line) in &block.body {
        let (start, mut text) = match pending.take() {
            Some((start, text)) => (start, text + "\n" + line),
            None => {
                let trimmed = line.trim();
                if trimmed.is_empty() || trimmed.starts_with('#') {
                    continue;
                }
                (*number, line.to_string())
            }
        };
        if text.ends_with('\\') {
            pending = Some((start, text));
            continue;
        }
        text = text.trim_end().to_string();
        let exit_expected = claimed_exit(&text)
            .map_err(|e| format!("{}:{start}: {e}", block.page))?
            .unwrap_or(0);
        out.push(Shown {
            page: block.page.clone(),
            line: start,
            text,
            exit_expected,
        });
    }
    if let Some((start, _)) = pending {
        return Err(format!(
            "{}:{start}: a command continues past its block",
            block.page
        ));
    }
    Ok(out)
}

/// The exit a command's trailing comment claims, if it claims one.
fn claimed_exit(text: &str) -> Result<Option<i32>, String> {
    let last = text.lines().last().unwrap_or("");
    let Some(at) = last.find("  #") else {
        return Ok(None);
    };
    let comment = last[at + 3..].trim();
    let Some(rest) = comment
        .strip_prefix("exits ")
        .or_else(|| comment.strip_prefix("exit "))
    else {
        return Ok(None);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let code: i32 = digits
        .parse()
        .map_err(|_| format!("`# {comment}` claims an exit but gives no number"))?;
    if !(0..=255).contains(&code) {
        return Err(format!("exit {code} is not an exit status"));
    }
    Ok(Some(code))
}

/// A `text` block may hold output, file trees and usage synopses, never a command in
/// disguise: a line that begins like a command must be a synopsis (it shows `[` options).
pub fn disguised_commands(block: &Block) -> Vec<String> {
    if block.info != "text" {
        return Vec::new();
    }
    block
        .body
        .iter()
        .filter(|(_, line)| {
            let trimmed = line.trim_start();
            COMMAND_STARTS.iter().any(|s| trimmed.starts_with(s)) && !trimmed.contains('[')
        })
        .map(|(number, line)| {
            format!(
                "{}:{number}: `{}` looks like a command in a text block: show it in a sh block (run by tests/docs.rs) or in prose",
                block.page,
                line.trim()
            )
        })
        .collect()
}

/// The anchors of a page's headings as GitHub makes them: lower case, spaces to `-`,
/// every character but letters, digits, `-` and `_` dropped.
pub fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let Some(title) = line.trim_start_matches('#').strip_prefix(' ') else {
            continue;
        };
        if in_fence || !line.starts_with('#') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        out.push(slug);
    }
    out
}

/// The page's relative Markdown links `[..](target)` as (line, path, anchor): web addresses
/// left out; a link within the page has an empty path.
pub fn links(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a.to_string())),
                    None => (target, None),
                };
                out.push((index + 1, path.to_string(), anchor));
            }
            rest = &after[end..];
        }
    }
    out
}

/// The files the page links, with their line.
pub fn relative_links(text: &str) -> Vec<(usize, String)> {
    links(text)
        .into_iter()
        .filter(|(_, path, _)| !path.is_empty())
        .map(|(line, path, _)| (line, path))
        .collect()
}

#[test]
fn the_rule_reads_commands_exits_and_continuations() {
    let page = "```sh\n# a comment line\nbash run-lab.sh 14\n\ncrashlab x \\\n  --y 1  # exits 1: broke\n```\n```text\ncrashlab explore 14 [--jobs N]\ncrashlab driver 14\n```\n";
    let found = blocks("p.md", page).unwrap();
    assert_eq!(found.len(), 2);
    let shown = commands(&found[0]).unwrap();
    assert_eq!(shown.len(), 2);
    assert_eq!((shown[0].line, shown[0].exit_expected), (3, 0));
    assert_eq!((shown[1].line, shown[1].exit_expected), (5, 1));
    assert_eq!(shown[1].bare(), "crashlab x --y 1");
    assert_eq!(
        disguised_commands(&found[1]).len(),
        1,
        "the synopsis passes, the command not"
    );
    assert!(
        blocks("p.md", "```\nls\n```\n").is_err(),
        "an unlabelled fence is refused"
    );
    assert!(
        blocks("p.md", "```bash\nls\n```\n").is_err(),
        "only sh holds commands"
    );
    assert!(
        blocks("p.md", "```sh\nls\n").is_err(),
        "an unclosed fence is refused"
    );
    let bad = blocks("p.md", "```sh\nls  # exit x\n```\n").unwrap();
    assert!(
        commands(&bad[0]).is_err(),
        "a claimed exit without a number is refused"
    );
    assert_eq!(
        relative_links("[a](docs/x.md) [b](https://e.org) [c](y.md#z)\n"),
        vec![(1, "docs/x.md".to_string()), (1, "y.md".to_string())]
    );
}

#[test]
fn anchors_are_github_s() {
    let page = "# Lab 13 (http-dispatch): a clean history\n## Every crash point of lab 13: `crashlab explore 13`\n```sh\n# not a heading\n```\n";
    assert_eq!(
        anchors(page),
        vec![
            "lab-13-http-dispatch-a-clean-history",
            "every-crash-point-of-lab-13-crashlab-explore-13"
        ]
    );
    assert_eq!(
        links("[m](#map) [p](x.md#y)\n")[0],
        (1, String::new(), Some("map".into()))
    );
}
