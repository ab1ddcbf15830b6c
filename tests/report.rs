//! The pictures a user gets: every SVG the tool writes (driver 14, driver 13's scenarios,
//! explore 14 and 13) parses, renders, and keeps every text inside its canvas, measured with
//! real fonts; report.html is one well-formed page whose every link is a file of the run; the
//! audit checks the pictures like any other evidence file.

mod common;

use std::path::{Path, PathBuf};

use common::{code, crashlab, stderr, stdout};
use resvg::usvg;

/// The fonts the pictures name come first in their `font-family`; on Debian, the package
/// fonts-dejavu-core. Without them, usvg would drop or mis-measure the text.
fn fonts() -> usvg::Options<'static> {
    let mut options = usvg::Options::default();
    options.fontdb_mut().load_system_fonts();
    let mono = options.fontdb.faces().any(|f| {
        f.families
            .iter()
            .any(|(name, _)| name == "DejaVu Sans Mono")
    });
    assert!(
        mono,
        "no DejaVu Sans Mono among the system fonts: install fonts-dejavu-core"
    );
    options
}

/// Every text node of a tree, with its box in canvas coordinates.
fn texts(group: &usvg::Group, out: &mut Vec<(String, usvg::Rect)>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => texts(g, out),
            usvg::Node::Text(t) => {
                let content: String = t.chunks().iter().map(|c| c.text()).collect();
                out.push((content, t.abs_bounding_box()));
            }
            _ => {}
        }
    }
}

/// Parse, render, and measure one SVG file; returns how many texts it holds.
fn check_svg(path: &Path, options: &usvg::Options) -> usize {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tree = usvg::Tree::from_data(&data, options)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    let size = tree.size();
    assert!(
        size.width() >= 100.0 && size.height() >= 100.0,
        "{}",
        path.display()
    );
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width().ceil() as u32, size.height().ceil() as u32)
            .expect("a canvas");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    // Something was drawn: dark pixels (text, frames) on the white background.
    let dark = pixmap
        .pixels()
        .iter()
        .filter(|p| p.alpha() == 255 && (p.red() as u32 + p.green() as u32 + p.blue() as u32) < 200)
        .count();
    assert!(dark > 1000, "{}: only {dark} dark pixels", path.display());
    let mut found = Vec::new();
    texts(tree.root(), &mut found);
    // Every <text> of the file was laid out: none was dropped for want of a font.
    let source = String::from_utf8(data).expect("UTF-8");
    let doc = roxmltree::Document::parse(&source).expect("XML");
    let elements = doc.descendants().filter(|n| n.has_tag_name("text")).count();
    assert_eq!(found.len(), elements, "{}: texts laid out", path.display());
    for (content, bbox) in &found {
        assert!(
            bbox.left() >= 0.0
                && bbox.top() >= 0.0
                && bbox.right() <= size.width()
                && bbox.bottom() <= size.height(),
            "{}: '{content}' at {bbox:?} leaves the {}x{} canvas",
            path.display(),
            size.width(),
            size.height()
        );
    }
    found.len()
}

/// report.html: well-formed (as XML), no script and no external asset, every link a file
/// of the run or an anchor of the page; returns its links.
fn check_page(dir: &Path, timelines: usize, pass: bool) -> Vec<String> {
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&page, options)
        .unwrap_or_else(|e| panic!("report.html is not well-formed: {e}"));
    for tag in ["script", "link", "img", "iframe", "object", "embed"] {
        assert!(
            !doc.descendants().any(|n| n.has_tag_name(tag)),
            "report.html has <{tag}>"
        );
    }
    assert!(!page.contains("url("), "no asset from CSS");
    assert!(!doc.descendants().any(|n| n.attribute("src").is_some()));
    let svgs = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .count();
    assert_eq!(svgs, timelines, "every timeline is inlined");
    let ids: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    let mut links = Vec::new();
    for href in doc.descendants().filter_map(|n| n.attribute("href")) {
        if let Some(anchor) = href.strip_prefix('#') {
            assert!(ids.contains(&anchor), "#{anchor} names no element");
            continue;
        }
        assert!(
            !href.contains(':') && !href.starts_with('/') && !href.contains(".."),
            "{href} is not a relative path inside the run"
        );
        assert!(
            dir.join(href).is_file(),
            "{href} links to no file of the run"
        );
        links.push(href.to_string());
    }
    let verdict = doc
        .descendants()
        .find(|n| {
            n.attribute("class")
                .is_some_and(|c| c.starts_with("verdict"))
        })
        .expect("a verdict");
    let words: String = verdict
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    let expected = if pass {
        ["PASS", ":valid? true"]
    } else {
        ["FAIL", ":valid? false"]
    };
    assert!(expected.iter().all(|w| words.contains(w)), "{words}");
    links
}

fn audit_passes(dir: &Path) {
    let out = crashlab(dir.parent().unwrap(), &["audit", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

fn run(dir: &Path, args: &[&str]) -> PathBuf {
    let out = crashlab(dir, args);
    assert_eq!(code(&out), 0, "{args:?}: {}{}", stdout(&out), stderr(&out));
    dir.join(args.last().unwrap())
}

#[test]
fn every_driver_run_has_a_timeline_and_a_page_that_render_whole() {
    let options = fonts();
    let tmp = tempfile::tempdir().unwrap();
    let r14 = run(tmp.path(), &["driver", "14", "--out", "r14"]);
    let texts = check_svg(&r14.join("timeline.svg"), &options);
    assert!(texts > 50, "{texts} texts");
    let svg = std::fs::read_to_string(r14.join("timeline.svg")).unwrap();
    for shown in [
        "sender.after-commit",
        "publisher.after-queue-commit",
        "consumer.after-receiver-commit",
        "contract R1 message M1 amount 25",
        "inbox and ledger for message M1 (+25 to R1)",
        "M1: its first commit on each database",
        "ledger 25",
    ] {
        assert!(svg.contains(shown), "timeline.svg shows '{shown}'");
    }
    let links = check_page(&r14, 1, true);
    for file in [
        "processes.json",
        "results.json",
        "database-files.json",
        "manifest.json",
    ] {
        assert!(links.iter().any(|l| l == file), "report.html links {file}");
    }
    assert!(links.iter().any(|l| l == "consume-crash.stdout.txt"));
    assert!(links.iter().any(|l| l == "timeline.svg"));
    audit_passes(&r14);

    let r13 = run(tmp.path(), &["driver", "13", "--out", "r13"]);
    let mut scenarios = 0;
    for entry in std::fs::read_dir(&r13).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert!(path.join("timeline.svg").is_file(), "{}", path.display());
            check_svg(&path.join("timeline.svg"), &options);
            scenarios += 1;
        }
    }
    assert!(scenarios >= 10, "one timeline per scenario: {scenarios}");
    assert!(
        !r13.join("timeline.svg").exists(),
        "lab 13's timelines are per scenario"
    );
    let crash = std::fs::read_to_string(r13.join("keyed-receiver-crash/timeline.svg")).unwrap();
    assert!(crash.contains("receiver.after-effect-commit") && crash.contains("effect 1 key K1"));
    let links = check_page(&r13, scenarios, true);
    assert!(links.iter().any(|l| l == "two-dispatchers/timeline.svg"));
    audit_passes(&r13);

    // The pictures are evidence: a changed byte is found by the audit.
    let svg = r14.join("timeline.svg");
    let mut bytes = std::fs::read(&svg).unwrap();
    bytes.push(b'\n');
    std::fs::write(&svg, bytes).unwrap();
    let out = crashlab(tmp.path(), &["audit", "r14"]);
    assert_ne!(code(&out), 0);
    assert!(stdout(&out).contains("timeline.svg"), "{}", stdout(&out));
}

#[test]
fn explores_svg_keeps_its_text_inside_at_every_lab() {
    let options = fonts();
    let tmp = tempfile::tempdir().unwrap();
    for lab in ["14", "13"] {
        let name = format!("e{lab}");
        let dir = run(tmp.path(), &["explore", lab, "--out", &name]);
        let texts = check_svg(&dir.join("explore.svg"), &options);
        assert!(texts > 20, "lab {lab}: {texts} texts");
    }
}

#[test]
fn a_failed_run_shows_its_failure_in_both_pictures() {
    let options = fonts();
    let tmp = tempfile::tempdir().unwrap();
    let out = crashlab(
        tmp.path(),
        &[
            "driver",
            "14",
            "--move-crash",
            "business-crash=sender.after-commit@5",
            "--out",
            "bad",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let dir = tmp.path().join("bad");
    check_svg(&dir.join("timeline.svg"), &options);
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    assert!(svg.contains("FAIL: 1 of 12 steps did not hold their expectations"));
    assert!(svg.contains("FAILED: exit 78, expected 73"));
    check_page(&dir, 1, false);
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("the armed point was never reached"));
    audit_passes(&dir);
}
