//! A JUnit XML report for CI: one test suite of cases, each passed, failed (a message and a
//! text) or skipped. Any command with a list of checks can write one (`crashlab probe
//! --junit FILE` is the first); the format is the one CI systems read (Jenkins, GitLab,
//! GitHub's test reporters): `<testsuites><testsuite><testcase>…`.
//!
//! Every name and text is XML-escaped here, and characters XML 1.0 cannot hold at all
//! (control bytes other than tab and newline) are written as `\u{…}`, so whatever a
//! check observed (a hostile server's reply) cannot break the document.

use std::path::Path;

use anyhow::{Context, Result};

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// `message` is the one-line summary CI shows; `text` the detail.
    Failed {
        message: String,
        text: String,
    },
    Skipped {
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub time_s: f64,
    pub outcome: Outcome,
    /// What the case saw, shown by CI beside it (empty: none).
    pub system_out: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub time_s: f64,
    pub cases: Vec<Case>,
}

impl Suite {
    pub fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
            .count()
    }

    pub fn skipped(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
            .count()
    }

    /// The whole document.
    pub fn render(&self) -> String {
        let (tests, failures, skipped) = (self.cases.len(), self.failures(), self.skipped());
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml.push_str(&format!(
            // No `skipped` here: the schema CI systems read (Jenkins xUnit's junit-10.xsd)
            // allows it on <testsuite> only, and refuses the document otherwise.
            "<testsuites name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">\n",
            name = escape(&self.name),
            time = seconds(self.time_s)
        ));
        xml.push_str(&format!(
            "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time}\">\n",
            name = escape(&self.name),
            time = seconds(self.time_s)
        ));
        for case in &self.cases {
            xml.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
                escape(&case.name),
                escape(&case.classname),
                seconds(case.time_s)
            ));
            if case.outcome == Outcome::Passed && case.system_out.is_empty() {
                xml.push_str("/>\n");
                continue;
            }
            xml.push_str(">\n");
            match &case.outcome {
                Outcome::Passed => {}
                Outcome::Failed { message, text } => xml.push_str(&format!(
                    "      <failure message=\"{}\" type=\"failure\">{}</failure>\n",
                    escape(message),
                    escape(text)
                )),
                Outcome::Skipped { message } => xml.push_str(&format!(
                    "      <skipped message=\"{}\"/>\n",
                    escape(message)
                )),
            }
            if !case.system_out.is_empty() {
                xml.push_str(&format!(
                    "      <system-out>{}</system-out>\n",
                    escape(&case.system_out)
                ));
            }
            xml.push_str("    </testcase>\n");
        }
        xml.push_str("  </testsuite>\n</testsuites>\n");
        xml
    }

    /// Write the document to `path` whole: a temporary file beside it, then a rename, so a
    /// reader never sees half a report.
    pub fn write(&self, path: &Path) -> Result<()> {
        let name = path.file_name().ok_or_else(|| {
            crate::fail::usage(format!("--junit {}: not a file name", path.display()))
        })?;
        let tmp = path.with_file_name(format!(".{}.tmp", name.to_string_lossy()));
        std::fs::write(&tmp, self.render())
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }
}

/// A `--junit FILE` that can be written: said before a run starts, since a report that
/// cannot be written after the run would come too late to choose another name.
pub fn check_path(path: &Path) -> Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if path.is_dir() || path.file_name().is_none() || parent.is_some_and(|p| !p.is_dir()) {
        return Err(crate::fail::usage(format!(
            "--junit {}: not a file in an existing directory",
            path.display()
        )));
    }
    Ok(())
}

/// Seconds with millisecond precision; a negative or non-finite time (a clock gone wrong)
/// is 0.
fn seconds(s: f64) -> String {
    let s = if s.is_finite() && s > 0.0 { s } else { 0.0 };
    format!("{s:.3}")
}

/// `text` as XML character data or an attribute value: the five markup characters as
/// entities, tab, newline and carriage return as character references (attributes keep
/// them), and every other character XML 1.0 forbids (C0 controls, U+FFFE, U+FFFF) as the
/// visible `\u{…}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        Suite {
            name: "crashlab probe".into(),
            time_s: 1.5,
            cases: vec![
                Case {
                    name: "retry".into(),
                    classname: "probe.draft-2.6".into(),
                    time_s: 0.012,
                    outcome: Outcome::Passed,
                    system_out: String::new(),
                },
                Case {
                    name: "concurrent <8>".into(),
                    classname: "probe.draft-2.6".into(),
                    time_s: 0.2,
                    outcome: Outcome::Failed {
                        message: "expected \"effect once\", got effects 8 & duplicate".into(),
                        text: "body: \u{1b}[31m{'a'}\u{0}\r\nnext".into(),
                    },
                    system_out: String::new(),
                },
                Case {
                    name: "key-expiry".into(),
                    classname: "probe.draft-2.3".into(),
                    time_s: 0.0,
                    outcome: Outcome::Skipped {
                        message: "give --key-ttl-ms".into(),
                    },
                    system_out: "seen: replayed".into(),
                },
            ],
        }
    }

    #[test]
    fn the_document_parses_and_keeps_every_text_as_written() {
        let xml = suite().render();
        let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
        let top = doc.root_element();
        assert_eq!(top.tag_name().name(), "testsuites");
        assert_eq!(top.attribute("tests"), Some("3"));
        assert_eq!(top.attribute("failures"), Some("1"));
        assert_eq!(
            top.attribute("skipped"),
            None,
            "not allowed on <testsuites>"
        );
        let suite = top.first_element_child().unwrap();
        assert_eq!(suite.attribute("skipped"), Some("1"));
        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 3);
        assert_eq!(cases[1].attribute("name"), Some("concurrent <8>"));
        assert_eq!(cases[0].attribute("time"), Some("0.012"));
        let failure = cases[1]
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("expected \"effect once\", got effects 8 & duplicate")
        );
        // Control bytes XML cannot hold are shown, CR and LF kept.
        assert_eq!(failure.text(), Some("body: \\u{1b}[31m{'a'}\\u{0}\r\nnext"));
        let skipped = cases[2]
            .children()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(skipped.attribute("message"), Some("give --key-ttl-ms"));
        let out = cases[2]
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .unwrap();
        assert_eq!(out.text(), Some("seen: replayed"));
    }

    #[test]
    fn a_passed_case_without_output_is_one_empty_element() {
        let xml = suite().render();
        assert!(
            xml.contains("<testcase name=\"retry\" classname=\"probe.draft-2.6\" time=\"0.012\"/>")
        );
        assert_eq!(seconds(f64::NAN), "0.000");
        assert_eq!(seconds(-1.0), "0.000");
    }

    #[test]
    fn the_file_is_written_whole_and_replaces_an_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.xml");
        std::fs::write(&path, "old").unwrap();
        suite().write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("<?xml"));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }
}
