//! Lines of a batch file (and of `solve -`'s standard input): one board per line, `#` comment
//! lines and blank lines skipped, and anything after ` # ` on a board's line kept as its facts
//! (`id=7 optimal=52`) rather than parsed as part of the board; a `size=3x4` fact gives the
//! board's shape.

use crate::board::{Board, BoardError, Shape};
use crate::parse::parse_board_in;

/// Longest line a batch may hold, in bytes: a 5x5 board with its facts and a 200-move
/// `moves=` claim takes well under a tenth of it. A longer line is refused with its number,
/// by the client before anything is sent and by the coordinator at intake.
pub const MAX_LINE_BYTES: usize = 4096;

/// Invalid UTF-8 sequences a batch file may hold before it is refused as not text (a few stray
/// bytes, say a Latin-1 comment, become invalid lines the coordinator reports by number).
pub const MAX_INVALID_UTF8: usize = 8;

/// Why some bytes are not a batch file's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotText {
    #[error("a NUL byte at byte {offset} (line {line}): this is not a text file")]
    Nul { offset: usize, line: usize },
    #[error(
        "{count} invalid UTF-8 sequences, the first at byte {offset} (line {line}): this is not a text file"
    )]
    InvalidUtf8 {
        count: usize,
        offset: usize,
        line: usize,
    },
    #[error("line {line} is {bytes} bytes long; a batch line may be at most {MAX_LINE_BYTES}")]
    LongLine { line: usize, bytes: usize },
    #[error("{lines} lines; a batch may hold at most {most}: split it into several")]
    TooManyLines { lines: usize, most: usize },
}

/// Checks that `bytes` can be a batch file: no NUL byte, at most [`MAX_INVALID_UTF8`] invalid
/// UTF-8 sequences, no line over [`MAX_LINE_BYTES`]. Names the first offending offset or line.
pub fn check_text(bytes: &[u8]) -> Result<(), NotText> {
    let line_of = |offset: usize| 1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count();
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(NotText::Nul {
            offset,
            line: line_of(offset),
        });
    }
    let (mut count, mut first, mut rest, mut at) = (0, None, bytes, 0);
    while let Err(error) = std::str::from_utf8(rest) {
        let bad = at + error.valid_up_to();
        first = first.or(Some(bad));
        count += 1;
        let skip = error.valid_up_to()
            + error
                .error_len()
                .unwrap_or(rest.len() - error.valid_up_to());
        at += skip;
        rest = &rest[skip..];
    }
    if let Some(offset) = first.filter(|_| count > MAX_INVALID_UTF8) {
        return Err(NotText::InvalidUtf8 {
            count,
            offset,
            line: line_of(offset),
        });
    }
    if let Some((index, line)) = bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .find(|(_, line)| line.len() > MAX_LINE_BYTES)
    {
        return Err(NotText::LongLine {
            line: index + 1,
            bytes: line.len(),
        });
    }
    Ok(())
}

/// One board line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchLine<'a> {
    /// 1-based line number in the file.
    pub number: usize,
    /// The board text, trimmed.
    pub board: &'a str,
    /// Whatever followed ` # `, trimmed; empty if nothing did.
    pub facts: &'a str,
}

impl<'a> BatchLine<'a> {
    /// Reads line `number` (1-based); `None` for a blank or comment line. A byte-order mark at
    /// the start of the first line and a trailing `\r` are ignored.
    pub fn read(number: usize, raw: &'a str) -> Option<BatchLine<'a>> {
        let raw = if number == 1 {
            raw.strip_prefix('\u{feff}').unwrap_or(raw)
        } else {
            raw
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let (board, facts) = line.split_once(" # ").unwrap_or((line, ""));
        Some(BatchLine {
            number,
            board: board.trim(),
            facts: facts.trim(),
        })
    }

    /// The value of fact `key` (`optimal` in `id=3 optimal=59`), if present.
    pub fn fact(&self, key: &str) -> Option<&'a str> {
        self.facts
            .split_whitespace()
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
    }

    /// The line's board: of the shape its `size=RxC` fact gives, else of `shape`, else a square
    /// of its count (see [`parse_board_in`]).
    pub fn read_board(&self, shape: Option<Shape>) -> Result<Board, BoardError> {
        let shape = match self.fact("size") {
            Some(size) => Some(size.parse::<Shape>()?),
            None => shape,
        };
        parse_board_in(self.board, shape)
    }
}

/// Every board line of a whole file's text.
pub fn board_lines(text: &str) -> impl Iterator<Item = BatchLine<'_>> {
    text.lines()
        .enumerate()
        .filter_map(|(index, raw)| BatchLine::read(index + 1, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_refused_at_its_first_nul_byte_many_bad_sequences_or_a_long_line() {
        assert_eq!(check_text(b"1,2,3\n4 5 6\n"), Ok(()));
        assert_eq!(
            check_text(b"1,2,3\n4\x005"),
            Err(NotText::Nul { offset: 7, line: 2 })
        );
        // A few stray bytes stay lines of their own, for the coordinator to report.
        assert_eq!(check_text(b"# caf\xe9\n1,2,3\n"), Ok(()));
        let noise: Vec<u8> = b"ok\n".iter().copied().chain([0xff; 20]).collect();
        assert_eq!(
            check_text(&noise),
            Err(NotText::InvalidUtf8 {
                count: 20,
                offset: 3,
                line: 2
            })
        );
        let long = format!("1,2,3\n{}\n", "1 ".repeat(MAX_LINE_BYTES));
        assert_eq!(
            check_text(long.as_bytes()),
            Err(NotText::LongLine {
                line: 2,
                bytes: 2 * MAX_LINE_BYTES
            })
        );
    }

    #[test]
    fn skips_comments_and_blanks_and_keeps_facts() {
        let text = "\u{feff}# header\n\n1,2,3 # id=4 optimal=5\r\n  \n4 5 6\n7,8#9\n";
        let lines: Vec<_> = board_lines(text).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            (lines[0].number, lines[0].board, lines[0].facts),
            (3, "1,2,3", "id=4 optimal=5")
        );
        assert_eq!(lines[0].fact("optimal"), Some("5"));
        assert_eq!(lines[0].fact("id"), Some("4"));
        assert_eq!(lines[0].fact("opt"), None);
        assert_eq!((lines[1].number, lines[1].board), (5, "4 5 6"));
        assert_eq!(lines[2].board, "7,8#9", "only ' # ' separates facts");
    }
}
