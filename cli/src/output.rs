//! Standard output, where the commands print their results. A write there can fail: the
//! reader of a pipe went away (`tilesolve bench FILE | head -1`). `println!` panics then;
//! [`outln!`] hands the error back, so the command stops and `main` ends it quietly
//! (`reader_went_away`). The crate denies `clippy::print_stdout`, so a line `println!` would
//! print goes through here (the result streams of `results.rs` and `export` have writers of
//! their own, whose errors return the same way).

/// Writes one line to standard output, formatted as `println!` would, and returns the write's
/// error.
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// One line and its end, under one lock of standard output, so that lines printed by several
/// threads (`bench --threads N`) never interleave.
pub fn line(text: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)?;
    out.write_all(b"\n")
}
