//! Progress on stderr: a bar when stderr is a terminal, a plain line per tenth otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    last_tenth: u64,
}

impl Progress {
    pub fn new(label: &str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total.max(1));
            let style = ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} units {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            bar
        });
        Progress {
            bar,
            label: label.to_string(),
            last_tenth: 0,
        }
    }

    /// Work done so far, out of `total`, with a short note (kills made, say).
    pub fn update(&mut self, done: u64, total: u64, note: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_length(total.max(1));
                bar.set_position(done.min(total));
                bar.set_message(note.to_string());
            }
            None => {
                let tenth = done.min(total) * 10 / total.max(1);
                if tenth > self.last_tenth {
                    self.last_tenth = tenth;
                    // Progress is no evidence: a closed stderr must not stop the run.
                    crate::out::warn(&format!(
                        "{}: {}% ({done} of {total} units) {note}",
                        self.label,
                        tenth * 10
                    ));
                }
            }
        }
    }

    /// A phase of the work begins (bench): one line either way.
    pub fn phase(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("{}: {text}", self.label)),
            None => crate::out::warn(&format!("{}: {text}", self.label)),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
