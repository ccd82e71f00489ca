//! Progress for long work on a terminal: pattern database builds get a bar (placements reached
//! out of all), and a line before and after saying what happens and how long it took.

use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use tilesolve::pdb::PdbEvent;

static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Reports pattern database events on standard error.
pub fn pdb_events(event: PdbEvent<'_>) {
    let mut bar = BAR.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match event {
        PdbEvent::Loaded { .. } => {}
        PdbEvent::Refused { error } => eprintln!("warning: {error}; rebuilding it"),
        PdbEvent::Building {
            path,
            entries,
            estimated_seconds,
        } => {
            eprintln!(
                "building pattern database {} ({} entries, about {:.0} s; built once, then reused)",
                path.display(),
                entries,
                estimated_seconds.max(1.0)
            );
            let new_bar = ProgressBar::new(entries);
            new_bar.set_style(
                ProgressStyle::with_template(
                    "  {bar:40} {percent:>3}% level {msg} [{elapsed_precise}]",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            *bar = Some(new_bar);
        }
        PdbEvent::Progress(progress) => {
            if let Some(bar) = bar.as_ref() {
                bar.set_position(progress.reached);
                bar.set_message(progress.level.to_string());
            }
        }
        PdbEvent::Built { path, seconds } => {
            if let Some(bar) = bar.take() {
                bar.finish_and_clear();
            }
            eprintln!("built {} in {seconds:.1} s", path.display());
        }
        PdbEvent::Packing { path, entries } => eprintln!(
            "packing pattern database {} ({entries} entries) to half a byte an entry: it was built by an earlier version (once)",
            path.display()
        ),
        PdbEvent::Packed { path, seconds } => {
            eprintln!("packed {} in {seconds:.1} s", path.display())
        }
    }
}

/// A duration for people: "40 s", "7 min", "1.5 h".
pub fn duration(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else if seconds < 5400.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}
