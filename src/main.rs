//! crashlab: crash-recovery experiments on real processes and real SQLite files.
//!
//! `main` parses and dispatches; the work lives in the modules.

mod cli;
mod commands;
mod crash;
mod dispatch;
mod fail;
mod lab;
mod out;
mod outbox;
mod rng;
mod store;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(error) => {
            out::flush();
            eprintln!("crashlab: {}", fail::one_line(&error));
            fail::exit_code(&error)
        }
    };
    out::flush();
    std::process::exit(code);
}
