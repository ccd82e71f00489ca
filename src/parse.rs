//! Board text: `2,4,0,1,8,5,3,6,7`, `2 4 0 1 8 5 3 6 7`, and `{{2,4,0},{1,8,5},{3,6,7}}`.
//!
//! Columns in errors count characters from 1, so a user can find the offending spot.

use crate::board::{Board, BoardError, Goal, Shape, MAX_CELLS};

/// Longest board text accepted: a 5x5 board with generous spacing is well under 200.
pub const MAX_BOARD_CHARS: usize = 1000;

/// Parses and validates one square board (9, 16 or 25 values), or a rectangle written as rows
/// in braces (`{{1,2,3},{4,5,0}}`).
pub fn parse_board(text: &str) -> Result<Board, BoardError> {
    parse_board_in(text, None)
}

/// Parses and validates one board of `shape` (rows x columns), or as [`parse_board`] without.
pub fn parse_board_in(text: &str, shape: Option<Shape>) -> Result<Board, BoardError> {
    if text.len() > MAX_BOARD_CHARS {
        let chars = text.chars().count();
        if chars > MAX_BOARD_CHARS {
            return Err(BoardError::TooLong {
                chars,
                max: MAX_BOARD_CHARS,
            });
        }
    }
    let shaped = |values: &[u64], shape: Option<Shape>| match shape {
        Some(shape) => Board::from_tiles_in(values, shape),
        None => Board::from_tiles(values),
    };
    if let Some(values) = canonical_values(text) {
        return shaped(&values, shape);
    }
    let (values, rows_shape) = parse_any_form(text)?;
    shaped(&values, shape.or(rows_shape))
}

/// Any of the three forms, with the column of what is wrong; the shape its rows give, when
/// written as rows that are not square.
fn parse_any_form(text: &str) -> Result<(Vec<u64>, Option<Shape>), BoardError> {
    let tokens = tokenize(text)?;
    if tokens.first().is_some_and(|t| t.kind == Kind::Open) {
        parse_braced(&tokens)
    } else {
        Ok((parse_flat(&tokens)?, None))
    }
}

/// The values of text in the form `Board` prints (numbers below 1000 separated by single
/// commas, at most `MAX_CELLS` of them), read without allocating: boards travel and are stored
/// in this form, and the coordinator and workers read one per task. None for any other text,
/// which the general path reads (and explains, if it is wrong).
fn canonical_values(text: &str) -> Option<Values> {
    let mut values = Values::default();
    let mut value: Option<u64> = None;
    for &byte in text.as_bytes() {
        match byte {
            b'0'..=b'9' => {
                let next = value.unwrap_or(0) * 10 + u64::from(byte - b'0');
                if next >= 1000 {
                    return None;
                }
                value = Some(next);
            }
            b',' => values.push(value.take()?)?,
            _ => return None,
        }
    }
    values.push(value?)?;
    Some(values)
}

/// Up to `MAX_CELLS` values on the stack.
#[derive(Default)]
struct Values {
    values: [u64; MAX_CELLS],
    len: usize,
}

impl Values {
    /// None when full.
    fn push(&mut self, value: u64) -> Option<()> {
        *self.values.get_mut(self.len)? = value;
        self.len += 1;
        Some(())
    }
}

impl std::ops::Deref for Values {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Number(u64),
    Comma,
    Open,
    Close,
}

impl Kind {
    fn symbol(self) -> char {
        match self {
            Kind::Number(_) => '0',
            Kind::Comma => ',',
            Kind::Open => '{',
            Kind::Close => '}',
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    column: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>, BoardError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().enumerate().peekable();
    while let Some((index, ch)) = chars.next() {
        let column = index + 1;
        let kind = match ch {
            ',' => Kind::Comma,
            '{' => Kind::Open,
            '}' => Kind::Close,
            c if c.is_whitespace() => continue,
            c if c.is_ascii_digit() => {
                // Saturate rather than overflow: any huge number is reported as out of range.
                let mut value = u64::from(c as u8 - b'0');
                while let Some(&(_, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    value = value
                        .saturating_mul(10)
                        .saturating_add(u64::from(d as u8 - b'0'));
                    chars.next();
                }
                Kind::Number(value)
            }
            // What lossy decoding leaves where a file had bytes that are not UTF-8.
            char::REPLACEMENT_CHARACTER => return Err(BoardError::NotText { column }),
            found => return Err(BoardError::UnexpectedChar { found, column }),
        };
        tokens.push(Token { kind, column });
    }
    Ok(tokens)
}

/// Numbers separated by whitespace or by single commas.
fn parse_flat(tokens: &[Token]) -> Result<Vec<u64>, BoardError> {
    let mut values = Vec::with_capacity(tokens.len());
    let mut after_comma = true;
    for token in tokens {
        match token.kind {
            Kind::Number(value) => {
                values.push(value);
                after_comma = false;
            }
            Kind::Comma if !after_comma => after_comma = true,
            kind @ Kind::Comma => {
                return Err(BoardError::MissingValue {
                    found: kind.symbol(),
                    column: token.column,
                })
            }
            kind => {
                return Err(BoardError::UnexpectedChar {
                    found: kind.symbol(),
                    column: token.column,
                })
            }
        }
    }
    if let (true, Some(last)) = (after_comma, tokens.last()) {
        return Err(BoardError::UnexpectedChar {
            found: ',',
            column: last.column,
        });
    }
    Ok(values)
}

/// `{{a,b,c},{d,e,f},...}`: rows in braces inside one outer pair, or `{a,b,c,...}`.
fn parse_braced(tokens: &[Token]) -> Result<(Vec<u64>, Option<Shape>), BoardError> {
    let last = tokens.last().map(|t| t.kind);
    if last != Some(Kind::Close) {
        return Err(BoardError::Braces {
            detail: "the outer '{' is never closed".into(),
        });
    }
    let inner = &tokens[1..tokens.len() - 1];
    if !inner.first().is_some_and(|t| t.kind == Kind::Open) {
        return Ok((parse_flat(inner)?, None));
    }
    let mut values = Vec::new();
    let mut row_len = None;
    let mut rest = inner;
    let mut row = 0;
    while let Some(open) = rest.first() {
        if open.kind != Kind::Open {
            return Err(BoardError::Braces {
                detail: format!("expected '{{' to start a row at column {}", open.column),
            });
        }
        let close = rest
            .iter()
            .position(|t| t.kind == Kind::Close)
            .ok_or_else(|| BoardError::Braces {
                detail: format!("the '{{' at column {} is never closed", open.column),
            })?;
        let cells = parse_flat(&rest[1..close])?;
        row += 1;
        let expected = *row_len.get_or_insert(cells.len());
        if cells.len() != expected {
            return Err(BoardError::RaggedRows {
                row,
                len: cells.len(),
                expected,
            });
        }
        values.extend(cells);
        rest = &rest[close + 1..];
        match rest.first() {
            Some(t) if t.kind == Kind::Comma => rest = &rest[1..],
            Some(t) if t.kind != Kind::Open => {
                return Err(BoardError::UnexpectedChar {
                    found: t.kind.symbol(),
                    column: t.column,
                })
            }
            _ => {}
        }
    }
    let shape = match row_len {
        Some(cols) if row != cols => Some(Shape::new(row, cols)?),
        _ => None,
    };
    Ok((values, shape))
}

impl std::str::FromStr for Goal {
    type Err = BoardError;

    /// `default` or `blank-last`, `korf` or `blank-first`, or a board in any input form.
    fn from_str(text: &str) -> Result<Goal, BoardError> {
        match text.trim() {
            "default" | "blank-last" => Ok(Goal::BlankLast),
            "korf" | "blank-first" => Ok(Goal::BlankFirst),
            board => parse_board(board).map(Goal::Custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_path_reads_and_refuses_as_the_general_one() {
        let texts = [
            "2,4,0,1,8,5,3,6,7",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,0",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,0",
            "002,4,0,1,8,5,3,6,7",
            "2,4,0,1,8,5,3,6,9",
            "2,4,0,1,8,5,3,6,6",
            "2,4,0,1,8,5,3,6",
            "1000,4,0,1,8,5,3,6,7",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,0,25",
            "",
            ",",
            "2,,4",
            "2,4,",
            ",2,4",
        ];
        for text in texts {
            let general = parse_any_form(text).and_then(|(values, _)| Board::from_tiles(&values));
            assert_eq!(parse_board(text), general, "{text:?}");
        }
    }

    #[test]
    fn all_three_forms_agree() {
        let a = parse_board("2,4,0,1,8,5,3,6,7").unwrap();
        let b = parse_board("  2 4 0\t1 8 5 3 6 7 ").unwrap();
        let c = parse_board("{{2,4,0},{1,8,5},{3,6,7}}").unwrap();
        let d = parse_board("{ {2, 4, 0}, {1, 8, 5}, {3, 6, 7} }").unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a, d);
        assert_eq!(a.to_string(), "2,4,0,1,8,5,3,6,7");
    }

    #[test]
    fn a_rectangle_is_read_from_its_rows_or_with_its_shape() {
        let rows = parse_board("{{1,2,3},{4,5,0}}").unwrap();
        assert_eq!(rows.shape(), Shape::new(2, 3).unwrap());
        let flat = parse_board_in("1,2,3,4,5,0", Some(Shape::new(2, 3).unwrap())).unwrap();
        assert_eq!(flat, rows);
        let tall = parse_board_in("1,2,3,4,5,0", Some(Shape::new(3, 2).unwrap())).unwrap();
        assert_ne!(tall, rows, "3x2 is not 2x3");
        let msg = |text: &str, shape: &str| {
            parse_board_in(text, Some(shape.parse().unwrap()))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            msg("1,2,3,4,5,0", "3x3"),
            "6 values do not fill a 3x3 board (9 cells)"
        );
        assert!(msg("1,2,3,4,5,6", "2x3").contains("tile 6 is out of range (a 2x3 board"));
        for bad in ["3", "3x", "x4", "1x8", "5x7", "three by four"] {
            let error = bad.parse::<Shape>().unwrap_err().to_string();
            assert!(
                error.contains(bad) || error.contains("not a supported shape"),
                "{bad}: {error}"
            );
        }
        assert_eq!("4x8".parse::<Shape>().unwrap().cells(), 32);
    }

    #[test]
    fn errors_name_the_problem() {
        let msg = |text: &str| parse_board(text).unwrap_err().to_string();
        assert_eq!(msg("a,b,c"), "unexpected 'a' at column 1");
        assert_eq!(msg("1,2,x"), "unexpected 'x' at column 5");
        assert!(msg("1,2,3")
            .starts_with("3 values is not a square board (3x3 = 9, 4x4 = 16, 5x5 = 25 values)"));
        assert!(msg("1,2,3,4,5,0").contains(
            "--size RxC, a ` # size=RxC` fact, or its rows in braces ({{1,2,3},{4,5,0}})"
        ));
        assert_eq!(msg("1,1,2,3,4,5,6,7,0"), "tile 1 appears twice");
        assert_eq!(msg("1,2,,3"), "missing value before ',' at column 5");
        assert_eq!(msg(""), "empty board: no tile values given");
        assert!(msg("{{1,2,3},{4,5},{6,7,0}}").contains("row 2 has 2 values"));
        assert!(msg("{{1,2,3},{4,5,6}").contains("never closed"));
        assert!(msg("99999999999999999999999,1,2,3,4,5,6,7,0").contains("out of range"));
        let six = (0..36).map(|v| v.to_string()).collect::<Vec<_>>().join(",");
        assert!(msg(&six).contains("6x6 board, an unsupported size"));
        assert_eq!(msg("1,2,\0"), "unexpected '\\0' at column 5");
        assert_eq!(
            msg("1,\u{fffd}"),
            "bytes that are not UTF-8 text at column 3 (is this a binary file?)"
        );
        assert_eq!(
            msg(&"1,".repeat(600)),
            "1200 characters is far too long for a board (at most 1000)"
        );
    }
}
