//! What a user reads before running anything: `crashlab --help` with the role subcommands
//! grouped under their lab, and the short guide `crashlab` alone prints.
//!
//! Both are built from the parser and the lab registry, so a new subcommand or a new lab
//! shows up in them without an edit here.

use crate::engine::Lab;

/// The engine commands in the order a new user meets them; any other subcommand that is no
/// lab's role follows in definition order.
const ENGINE_ORDER: &[&str] = &[
    "driver", "explore", "merge", "chaos", "bench", "probe", "audit", "points", "lab", "digest",
];

/// The commands to start with, shown by the guide and at the end of `--help`.
const START: &[(&str, &str)] = &[
    (
        "bash run-lab.sh 14",
        "build crashlab, run lab 14, print its table",
    ),
    (
        "crashlab driver 14",
        "the same, with crashlab already built",
    ),
];

/// The parser with its help: engine commands first, then each lab's roles under the lab.
pub fn command(labs: &[&'static Lab]) -> clap::Command {
    let mut cmd = super::parser(labs);
    // Built first so clap's own `help` subcommand is there to be listed.
    cmd.build();
    let styles = cmd.get_styles();
    let (h, h_end) = (
        styles.get_header().render(),
        styles.get_header().render_reset(),
    );
    let mut template =
        String::from("{before-help}{about-with-newline}\n{usage-heading} {usage}\n\n");
    template.push_str(&listing(&cmd, labs));
    template.push_str(&format!("{h}Options:{h_end}\n{{options}}\n\n"));
    template.push_str(&format!("{h}Start with:{h_end}\n"));
    for (line, what) in START {
        template.push_str(&format!("  {line:<22} {what}\n"));
    }
    template.push_str(
        "`crashlab` alone prints a short guide; `crashlab <COMMAND> --help` explains one command.",
    );
    cmd.help_template(template)
}

/// Subcommands by group: (heading, names). Every subcommand is in exactly one group.
fn groups(cmd: &clap::Command, labs: &[&'static Lab]) -> Vec<(String, Vec<String>)> {
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    let is_role = |name: &str| labs.iter().any(|lab| lab.role_names().contains(&name));
    let mut engine: Vec<String> = ENGINE_ORDER
        .iter()
        .filter(|n| names.iter().any(|m| m == *n))
        .map(|n| n.to_string())
        .collect();
    for name in &names {
        if !is_role(name) && !engine.contains(name) {
            engine.push(name.clone());
        }
    }
    let mut groups = vec![("Engine commands (any lab):".to_string(), engine)];
    for lab in labs {
        let roles: Vec<String> = lab
            .role_names()
            .iter()
            .filter(|r| names.iter().any(|m| m == *r))
            .map(|r| r.to_string())
            .collect();
        let title = format!("Lab {} roles ({}; {}):", lab.id, lab.slug, stacks_of(lab));
        groups.push((title, roles));
    }
    // Postcondition: nothing listed twice, nothing left out.
    let listed: usize = groups.iter().map(|(_, g)| g.len()).sum();
    debug_assert_eq!(listed, names.len(), "every subcommand in one group");
    groups
}

/// The groups as help text, one column of names as wide as the longest.
fn listing(cmd: &clap::Command, labs: &[&'static Lab]) -> String {
    let styles = cmd.get_styles();
    let (h, h_end) = (
        styles.get_header().render(),
        styles.get_header().render_reset(),
    );
    let (l, l_end) = (
        styles.get_literal().render(),
        styles.get_literal().render_reset(),
    );
    let groups = groups(cmd, labs);
    let width = groups
        .iter()
        .flat_map(|(_, g)| g.iter())
        .map(String::len)
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for (heading, names) in groups.iter().filter(|(_, g)| !g.is_empty()) {
        text.push_str(&format!("{h}{heading}{h_end}\n"));
        for name in names {
            let about = about(cmd, name);
            let pad = " ".repeat(width - name.len());
            text.push_str(&format!("  {l}{name}{l_end}{pad}  {about}\n"));
        }
        text.push('\n');
    }
    text
}

fn about(cmd: &clap::Command, name: &str) -> String {
    cmd.find_subcommand(name)
        .and_then(|c| c.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default()
}

/// The guide `crashlab` prints with no arguments: what it is, the labs, the engine commands
/// and the two commands to start with.
pub fn guide(labs: &[&'static Lab]) -> String {
    let mut cmd = super::parser(labs);
    cmd.build();
    let mut text = String::from(
        "crashlab: crash-recovery experiments on real processes and real SQLite files. Each step\n\
         runs as a fresh process, crashed at a named point right after a real commit; the files\n\
         are read back, and every run leaves evidence that `crashlab audit` re-checks offline.\n\n\
         Labs:\n",
    );
    let slug_width = labs.iter().map(|l| l.slug.len()).max().unwrap_or(0);
    for lab in labs {
        text.push_str(&format!(
            "  {:<3} {:<slug_width$}  {} ({})\n",
            lab.id,
            lab.slug,
            lab.title,
            stacks_of(lab)
        ));
    }
    let groups = groups(&cmd, labs);
    // `servers` is for poking at a stack's servers by hand: `--help` lists it, the glance not.
    let engine: Vec<&String> = groups[0]
        .1
        .iter()
        .filter(|n| *n != "help" && *n != "servers")
        .collect();
    let width = engine.iter().map(|n| n.len()).max().unwrap_or(0);
    text.push_str("\nEngine commands (any lab):\n");
    for name in engine {
        // The about's first clause: the guide is a glance, `--help` has the rest.
        let about = about(&cmd, name);
        let short = first_clause(&about);
        text.push_str(&format!("  {name:<width$}  {short}\n"));
    }
    text.push_str("\nStart with:\n");
    for (line, what) in START {
        text.push_str(&format!("  {line:<22} {what}\n"));
    }
    text.push_str(
        "`crashlab --help` lists every command and each lab's roles; `crashlab <COMMAND> --help` one.\n",
    );
    text
}

/// `stack sqlite` or `stacks sqlite, postgres-rabbitmq`: where a lab runs (`--stack`).
fn stacks_of(lab: &Lab) -> String {
    let names = lab.stack_names();
    let word = if names.len() == 1 { "stack" } else { "stacks" };
    format!("{word} {}", names.join(", "))
}

/// The part of an about before its first ':', and before an opening parenthesis that the
/// cut would leave unclosed ("A lab under load (lab 14: …" reads "A lab under load").
fn first_clause(about: &str) -> &str {
    let head = about.split(':').next().unwrap_or("");
    let head = match (head.rfind('('), head.rfind(')')) {
        (Some(open), close) if close.is_none_or(|close| close < open) => &head[..open],
        _ => head,
    };
    head.trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_cuts_no_parenthesis_in_half() {
        assert_eq!(
            first_clause("A lab under load (lab 14: sender, publisher), kills"),
            "A lab under load"
        );
        assert_eq!(first_clause("A lab's costs: per-phase"), "A lab's costs");
        assert_eq!(
            first_clause("List points (of a lab): all"),
            "List points (of a lab)"
        );
        let guide = guide(crate::engine::registry::labs());
        for line in guide.lines() {
            assert_eq!(
                line.matches('(').count(),
                line.matches(')').count(),
                "guide line {line:?}"
            );
        }
    }

    #[test]
    fn every_role_a_lab_names_is_a_subcommand_and_each_lab_is_listed_once() {
        let labs = crate::engine::registry::labs();
        let cmd = crate::cli::parser(labs);
        for lab in labs {
            let roles = lab.role_names();
            assert!(!roles.is_empty(), "lab {} has roles", lab.id);
            for role in roles {
                assert!(
                    cmd.find_subcommand(role).is_some(),
                    "lab {} names role {role}, which is no subcommand",
                    lab.id
                );
            }
        }
        let mut built = crate::cli::parser(labs);
        built.build();
        let headings: Vec<String> = groups(&built, labs).into_iter().map(|(h, _)| h).collect();
        for lab in labs {
            let mine = headings
                .iter()
                .filter(|h| h.starts_with(&format!("Lab {} roles", lab.id)))
                .count();
            assert_eq!(mine, 1, "lab {} has one group: {headings:?}", lab.id);
        }
        let guide = guide(labs);
        for lab in labs {
            let lines = guide
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("{} ", lab.id)))
                .count();
            assert_eq!(lines, 1, "lab {} is one line of the guide", lab.id);
        }
    }

    #[test]
    fn every_subcommand_is_in_exactly_one_group() {
        let mut cmd = crate::cli::parser(crate::engine::registry::labs());
        cmd.build();
        let groups = groups(&cmd, crate::engine::registry::labs());
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            let n = groups
                .iter()
                .filter(|(_, g)| g.iter().any(|m| m == name))
                .count();
            assert_eq!(n, 1, "{name} is in {n} groups");
        }
        assert!(groups[0].1.iter().any(|n| n == "driver"));
        assert!(!groups[0].1.iter().any(|n| n == "sender"));
    }
}
