//! `report.html`: one self-contained page for a run: the verdict, the timelines inlined, the
//! results table and links to the raw files, all relative. Inline CSS, no scripts, no
//! external assets; well-formed as XML too, so a strict parser reads it. Pure.

use std::fmt::Write;

use crate::engine::evidence;
use crate::engine::report::model::{self, Evidence};
use crate::engine::report::text::{self, escape};

pub const STYLE: &str = "
body { font: 15px/1.5 system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif; margin: 24px 32px; color: #212121; }
h1 { font-size: 24px; margin: 0 0 12px; }
h2 { font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #cfd8dc; padding-bottom: 4px; }
.verdict { font-size: 16px; padding: 10px 16px; border-radius: 6px; margin: 0 0 12px; }
.pass { background: #e8f5e9; border-left: 6px solid #2e7d32; }
.fail { background: #ffebee; border-left: 6px solid #c62828; }
.meta { color: #546e7a; font-size: 13px; }
.pic { overflow-x: auto; border: 1px solid #cfd8dc; border-radius: 4px; margin: 8px 0; background: white; }
.pic svg { display: block; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid #e0e0e0; padding: 3px 12px 3px 0; text-align: left; vertical-align: top; }
th { font-size: 13px; color: #546e7a; font-weight: 600; }
td { font: 13px/1.4 'DejaVu Sans Mono', Menlo, Consolas, monospace; }
td.n { text-align: right; }
tr.bad td { background: #ffebee; }
.yes { color: #2e7d32; font-weight: bold; }
.no { color: #c62828; font-weight: bold; }
code { font: 13px 'DejaVu Sans Mono', Menlo, Consolas, monospace; background: #f5f5f5; padding: 1px 4px; }
a { color: #1565c0; }
";

/// The raw files every run has, with what each holds.
const RAW: &[(&str, &str)] = &[
    (
        evidence::PROCESSES,
        "every process: argv, exit, signal, crash point, wall_ms, max_rss_kb; the versions and the command",
    ),
    (
        evidence::RESULTS,
        "each step: what was expected, what was observed, its problems",
    ),
    (
        evidence::DATABASE_FILES,
        "every database after every step: bytes, sha256, logical_sha256, frozen steps",
    ),
    (
        evidence::MANIFEST,
        "sha256 of every source file of the build and of every file here (crashlab audit checks it)",
    ),
];

/// A relative link to a file of the run, or the label alone when the path may not be linked.
pub fn link(path: &str, label: &str) -> String {
    if text::linkable(path) {
        format!(
            r#"<a href="{}">{}</a>"#,
            escape(&text::href(path)),
            escape(label)
        )
    } else {
        escape(label)
    }
}

/// The anchor of a group's section.
fn anchor(group: &str) -> String {
    format!("scenario-{}", text::href(group).replace('/', "-"))
}

/// The timeline file of a group, relative to the run.
pub fn timeline_path(group: &str) -> String {
    if group.is_empty() {
        "timeline.svg".to_string()
    } else {
        format!("{group}/timeline.svg")
    }
}

/// The verdict in Jepsen's words: the checker's `valid?`, and what the nemesis did.
fn verdict(ev: &Evidence) -> (bool, String) {
    let steps = &ev.results.steps;
    let failed: Vec<usize> = (0..steps.len()).filter(|&i| !steps[i].ok).collect();
    let ok = ev.results.ok && failed.is_empty();
    let n = steps.len();
    let crashes: Vec<String> = ev
        .outputs
        .iter()
        .filter_map(|o| o.crash.as_deref())
        .map(|c| c.split(' ').next().unwrap_or(c).to_string())
        .collect();
    let mut distinct: Vec<&String> = Vec::new();
    for c in &crashes {
        if !distinct.contains(&c) {
            distinct.push(c);
        }
    }
    let nemesis = match crashes.len() {
        0 => "The nemesis crashed no process.".to_string(),
        k => format!(
            "The nemesis crashed {k} {} ({} mode) at {}.",
            if k == 1 { "process" } else { "processes" },
            ev.processes.crash_mode,
            distinct
                .iter()
                .map(|c| format!("<code>{}</code>", escape(c)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let head = if ok {
        format!(
            "<b>PASS</b>: <code>:valid? true</code>. The checker found every expectation held \
             across {}. {nemesis}",
            crate::out::plural(n, "process", "processes")
        )
    } else {
        format!(
            "<b>FAIL</b>: <code>:valid? false</code>. The checker found {} of {} that did \
             not hold their expectations. {nemesis}",
            failed.len(),
            crate::out::plural(n, "step", "steps")
        )
    };
    (ok, head)
}

fn meta(ev: &Evidence) -> String {
    let p = &ev.processes;
    let git = match &p.git {
        Some(g) => format!(
            "commit <code>{}</code>{}",
            escape(&g.commit),
            if g.dirty { " (with changes)" } else { "" }
        ),
        None => "commit unknown".to_string(),
    };
    let moved = if p.moved_crashes.is_empty() {
        String::new()
    } else {
        format!(
            " · moved crashes <code>{}</code>",
            escape(&p.moved_crashes.join(", "))
        )
    };
    format!(
        "<code>{}</code> · crashlab {} · {git} · SQLite {} · crash mode {}{moved} · total wall_ms {}",
        escape(&p.command.join(" ")),
        escape(&p.crashlab_version),
        escape(&p.sqlite_version),
        escape(&p.crash_mode),
        text::ms(p.total_wall_ms)
    )
}

/// One row per step of the group.
fn results_table(s: &mut String, ev: &Evidence, members: &[usize]) {
    s.push_str(
        "<table>\n<tr><th>step</th><th>expected exit</th><th>exit</th><th>state</th>\
         <th>ok</th><th>wall_ms</th><th>output</th></tr>\n",
    );
    for &i in members {
        let p = &ev.processes.processes[i];
        let r = &ev.results.steps[i];
        let class = if r.ok { "" } else { r#" class="bad""# };
        let ok = if r.ok {
            r#"<span class="yes">yes</span>"#
        } else {
            r#"<span class="no">NO</span>"#
        };
        let mut state = escape(&model::state(p, r));
        for problem in &r.problems {
            let _ = write!(state, "<br/>{}", escape(problem));
        }
        let _ = writeln!(
            s,
            r#"<tr{class}><td>{}</td><td class="n">{}</td><td class="n">{}</td><td>{state}</td><td>{ok}</td><td class="n">{}</td><td>{} {}</td></tr>"#,
            escape(&p.step),
            p.expected_exit,
            p.exit,
            text::ms(p.wall_ms),
            link(&p.stdout, "stdout"),
            link(&p.stderr, "stderr"),
        );
    }
    s.push_str("</table>\n");
}

/// The page. `groups` are the run's output directories, each with its timeline's SVG.
pub fn render(ev: &Evidence, groups: &[(String, String)]) -> String {
    let (ok, head) = verdict(ev);
    let lab = &ev.processes.lab;
    let word = if ok { "PASS" } else { "FAIL" };
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    let _ = writeln!(
        s,
        "<title>crashlab driver, lab {}: {word}</title>",
        escape(lab)
    );
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(s, "<h1>crashlab driver: lab {}</h1>", escape(lab));
    let _ = writeln!(
        s,
        r#"<p class="verdict {}">{head}</p>"#,
        if ok { "pass" } else { "fail" }
    );
    let _ = writeln!(s, r#"<p class="meta">{}</p>"#, meta(ev));
    s.push_str(
        "<p>In Jepsen's words: the roles are the system and its clients, the crash points the \
         nemesis, the scenario the generator, the expected exits, crash lines and readback \
         stages the checker.</p>\n",
    );
    let procs = &ev.processes.processes;
    let members_of = |group: &str| -> Vec<usize> {
        (0..procs.len())
            .filter(|&i| model::group_of(&procs[i]) == group)
            .collect()
    };
    if groups.len() > 1 {
        s.push_str("<h2>Scenarios</h2>\n<table>\n<tr><th>scenario</th><th>ok</th><th>final state</th></tr>\n");
        for (group, _) in groups {
            let members = members_of(group);
            let ok = members.iter().all(|&i| ev.results.steps[i].ok);
            let last = members
                .iter()
                .rev()
                .find(|&&i| !model::readback_fields(&ev.results.steps[i]).is_empty())
                .map(|&i| model::state(&procs[i], &ev.results.steps[i]))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                r##"<tr{}><td><a href="#{}">{}</a></td><td>{}</td><td>{}</td></tr>"##,
                if ok { "" } else { r#" class="bad""# },
                anchor(group),
                escape(group),
                if ok {
                    r#"<span class="yes">yes</span>"#
                } else {
                    r#"<span class="no">NO</span>"#
                },
                escape(&last)
            );
        }
        s.push_str("</table>\n");
    }
    for (group, svg) in groups {
        let title = if group.is_empty() {
            "Timeline".to_string()
        } else {
            format!("Scenario {}", escape(group))
        };
        let _ = writeln!(s, r#"<h2 id="{}">{title}</h2>"#, anchor(group));
        let _ = writeln!(s, "<div class=\"pic\">\n{}</div>", svg.trim_end());
        let path = timeline_path(group);
        let _ = writeln!(
            s,
            r#"<p class="meta">The picture alone: {}. Hover a bar or a mark for the whole line.</p>"#,
            link(&path, &path)
        );
        results_table(&mut s, ev, &members_of(group));
    }
    s.push_str("<h2>Raw files</h2>\n<ul>\n");
    for (file, what) in RAW {
        let _ = writeln!(s, "<li>{}: {}</li>", link(file, file), escape(what));
    }
    s.push_str(
        "<li>each step's stdout (its SQL trace, commits, crash points) and stderr: linked in \
         the tables above</li>\n</ul>\n</body>\n</html>\n",
    );
    s
}
