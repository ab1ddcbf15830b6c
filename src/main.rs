//! crashlab: crash-recovery experiments on real processes and real SQLite files.
//!
//! `main` parses and dispatches; the work lives in the modules.

use clap::FromArgMatches;
use crashlab::events::{self, Event};
use crashlab::{cli, crash, engine, fail, out, route, store};

fn main() {
    // `crashlab point NAME`, the point protocol of a shell script: it runs inside a role's
    // process tree, so it neither dies with the harness on its own nor writes start events.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("point") && !may_show_help() {
        std::process::exit(crashlab::point::shell(&args[1..]));
    }
    engine::process::die_with_parent_if_asked();
    let labs = crashlab::labs::LABS;
    engine::registry::install(labs);
    out::catch_print_panics();
    // `crashlab` alone is someone asking what this is: the short guide, and success.
    if std::env::args_os().len() == 1 {
        out::print(&cli::guide(labs));
        std::process::exit(fail::EXIT_OK);
    }
    // Parsed in two steps so the subcommand's own name (the role) is at hand for the events.
    // A role pays only for its own flags: its parser alone is built, never the whole tree.
    let first = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let parser = match cli::role_entry(labs, first.as_deref()) {
        Some(role) if !may_show_help() => cli::role_parser(role),
        _ if may_show_help() => cli::command(labs),
        _ => cli::parser(labs),
    };
    let matches = match parser.try_get_matches() {
        Ok(matches) => matches,
        Err(error) => usage_error(error),
    };
    // A lab's role runs through its lab; every other subcommand is the engine's.
    let what = match cli::role(labs, &matches) {
        Some(role) => What::Role(role),
        None => match cli::Cli::from_arg_matches(&matches) {
            Ok(cli) => What::Engine(cli.command),
            Err(error) => usage_error(error),
        },
    };
    let role = matches.subcommand_name().unwrap_or("crashlab").to_string();
    store::set_trace(!matches.get_flag("no_trace"));
    if let Err(error) = events::open_from_env() {
        out::warn(&format!("crashlab: {}", fail::one_line(&error)));
        std::process::exit(fail::EXIT_IOERR);
    }
    events::emit(&Event::Start {
        role,
        pid: std::process::id(),
    });
    let ran = match what {
        What::Role(role) => {
            let (_, own) = matches.subcommand().expect("a role is a subcommand");
            (role.run)(own)
        }
        What::Engine(command) => route::run(command),
    };
    let code = match ran {
        Ok(fail::EXIT_OK) => match crash::not_reached() {
            None => fail::EXIT_OK,
            Some(missed) => {
                // The phase ran to its end without the crash it was armed for: say so on
                // stdout (the evidence) and stderr (the user), and fail with EX_CONFIG.
                let (point, hit) = (missed.at.point, missed.at.hit);
                out::line(&crash::not_reached_line(point, hit));
                out::flush();
                events::emit(&Event::NotReached {
                    point: point.to_string(),
                    hit,
                    hits: missed.hits,
                });
                let reached = match missed.hits {
                    0 => "never reached".to_string(),
                    1 => "reached once".to_string(),
                    n => format!("reached {}", out::plural(n, "time", "times")),
                };
                out::warn(&format!(
                    "crashlab: the armed crash point {point}@{hit} was not reached ({reached}); nothing crashed"
                ));
                fail::EXIT_NOT_REACHED
            }
        },
        Ok(code) => code,
        Err(error) => {
            out::flush();
            out::warn(&format!("crashlab: {}", fail::one_line(&error)));
            fail::exit_code(&error)
        }
    };
    out::flush();
    events::emit(&Event::End { code });
    std::process::exit(code);
}

/// What a command line asks to run.
enum What {
    /// One of a lab's roles.
    Role(crashlab::role::RoleEntry),
    /// One of the engine's commands.
    Engine(cli::Command),
}

/// Whether this command line may print the top-level help (`-h`, `--help`, `help`, or no
/// subcommand). The grouped help is built from the whole command tree, which costs about a
/// third of a role's start-up; a role run never shows it, so only such a run pays for it.
fn may_show_help() -> bool {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let no_subcommand = args
        .iter()
        .all(|a| a.to_str().is_some_and(|a| a.starts_with('-')));
    no_subcommand
        || args
            .iter()
            .any(|a| a == "-h" || a == "--help" || a == "help")
}

/// Help and version print as clap prints them; every other argument error is one line on
/// stderr, `crashlab: …`, and exit 2, like every other error of the tool.
fn usage_error(error: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit();
    }
    // clap spreads one error over lines (a list of missing arguments, a tip, the usage);
    // keep everything before the usage, on one line.
    let text = error.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let joined = parts.join(" ");
    let first = if joined.is_empty() {
        "invalid arguments"
    } else {
        joined.as_str()
    };
    let first = first.strip_prefix("error: ").unwrap_or(first);
    out::warn(&format!("crashlab: {first} (see crashlab --help)"));
    std::process::exit(fail::EXIT_USAGE);
}
