//! What a user reads before running anything: `crashlab --help` with the role subcommands
//! grouped under their lab, and the short guide `crashlab` alone prints.
//!
//! Both are built from the parser and the lab registry, so a new subcommand or a new lab
//! shows up in them without an edit here.

use crate::labs::LABS;

/// The engine commands in the order a new user meets them; any other subcommand that is no
/// lab's role follows in definition order.
const ENGINE_ORDER: &[&str] = &[
    "driver", "explore", "chaos", "bench", "audit", "points", "digest",
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
pub fn command() -> clap::Command {
    let mut cmd = super::parser();
    // Built first so clap's own `help` subcommand is there to be listed.
    cmd.build();
    let styles = cmd.get_styles();
    let (h, h_end) = (
        styles.get_header().render(),
        styles.get_header().render_reset(),
    );
    let mut template =
        String::from("{before-help}{about-with-newline}\n{usage-heading} {usage}\n\n");
    template.push_str(&listing(&cmd));
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
fn groups(cmd: &clap::Command) -> Vec<(String, Vec<String>)> {
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    let is_role = |name: &str| LABS.iter().any(|lab| lab.roles.contains(&name));
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
    for lab in LABS {
        let roles: Vec<String> = lab
            .roles
            .iter()
            .filter(|r| names.iter().any(|m| m == *r))
            .map(|r| r.to_string())
            .collect();
        // A lab on several stacks has a group per stack: its servers' stack names it.
        let title = match lab.stack {
            Some(stack) => format!("Lab {} roles ({}, {}):", lab.id, lab.slug, stack.name),
            None => format!("Lab {} roles ({}):", lab.id, lab.slug),
        };
        groups.push((title, roles));
    }
    // Postcondition: nothing listed twice, nothing left out.
    let listed: usize = groups.iter().map(|(_, g)| g.len()).sum();
    debug_assert_eq!(listed, names.len(), "every subcommand in one group");
    groups
}

/// The groups as help text, one column of names as wide as the longest.
fn listing(cmd: &clap::Command) -> String {
    let styles = cmd.get_styles();
    let (h, h_end) = (
        styles.get_header().render(),
        styles.get_header().render_reset(),
    );
    let (l, l_end) = (
        styles.get_literal().render(),
        styles.get_literal().render_reset(),
    );
    let groups = groups(cmd);
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
pub fn guide() -> String {
    let mut cmd = super::parser();
    cmd.build();
    let mut text = String::from(
        "crashlab: crash-recovery experiments on real processes and real SQLite files. Each step\n\
         runs as a fresh process, crashed at a named point right after a real commit; the files\n\
         are read back, and every run leaves evidence that `crashlab audit` re-checks offline.\n\n\
         Labs:\n",
    );
    let slug_width = LABS.iter().map(|l| l.slug.len()).max().unwrap_or(0);
    for lab in LABS {
        text.push_str(&format!(
            "  {:<3} {:<slug_width$}  {}\n",
            lab.id, lab.slug, lab.title
        ));
    }
    let groups = groups(&cmd);
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
        let guide = guide();
        for line in guide.lines() {
            assert_eq!(
                line.matches('(').count(),
                line.matches(')').count(),
                "guide line {line:?}"
            );
        }
    }

    #[test]
    fn every_role_a_lab_names_is_a_subcommand() {
        let cmd = crate::cli::parser();
        for lab in LABS {
            // What the lab adds to the command line is exactly the roles it names.
            let bare = clap::Command::new("bare");
            let added: Vec<String> = (lab.cli.augment)(bare)
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            assert_eq!(added, lab.roles, "lab {} adds exactly its roles", lab.id);
            assert!(!lab.roles.is_empty(), "lab {} has roles", lab.id);
            for role in lab.roles {
                assert!(
                    cmd.find_subcommand(role).is_some(),
                    "lab {} names role {role}, which is no subcommand",
                    lab.id
                );
            }
        }
    }

    #[test]
    fn every_subcommand_is_in_exactly_one_group() {
        let mut cmd = crate::cli::parser();
        cmd.build();
        let groups = groups(&cmd);
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
