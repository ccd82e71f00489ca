//! Lines of a batch file (and of `solve -`'s standard input): one board per line, `#` comment
//! lines and blank lines skipped, and anything after ` # ` on a board's line kept as its facts
//! (`id=7 optimal=52`) rather than parsed as part of the board.

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
