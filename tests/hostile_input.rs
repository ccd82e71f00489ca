//! Fuzzing the board parser and the batch-file reader with proptest: arbitrary bytes, near-valid
//! board text and odd files must give a board or a clear error, never a panic.
//!
//! The suite runs a few thousand cases per property; a long run is
//! `TILESOLVE_FUZZ_CASES=1000000 cargo test --release --test hostile_input` (RELIABILITY.md has
//! the figures).

use proptest::prelude::*;
use tilesolve::batch_file::{board_lines, BatchLine};
use tilesolve::{parse_board, BoardError};

fn cases() -> u32 {
    std::env::var("TILESOLVE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// What every parse must satisfy: a board prints and parses back to itself; an error has a
/// message, and one naming a column points inside the text.
fn check(text: &str) {
    match parse_board(text) {
        Ok(board) => {
            let again = parse_board(&board.to_string()).expect("a printed board parses");
            assert_eq!(again, board);
            let mut tiles = board.tiles().to_vec();
            tiles.sort_unstable();
            assert!(tiles.iter().enumerate().all(|(i, &t)| usize::from(t) == i));
        }
        Err(error) => {
            assert!(!error.to_string().is_empty());
            if let BoardError::UnexpectedChar { column, .. }
            | BoardError::MissingValue { column, .. }
            | BoardError::NotText { column } = error
            {
                assert!((1..=text.chars().count()).contains(&column), "{error}");
            }
        }
    }
}

/// Pieces that board text is made of, plus the ones that break it.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (0u64..30).prop_map(|n| n.to_string()),
        4 => Just(",".to_string()),
        3 => Just(" ".to_string()),
        2 => Just("{".to_string()),
        2 => Just("}".to_string()),
        1 => Just("\t".to_string()),
        1 => Just("\r".to_string()),
        1 => Just(" # ".to_string()),
        1 => Just("\u{feff}".to_string()),
        1 => Just("\u{fffd}".to_string()),
        1 => Just("\0".to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<char>().prop_map(|c| c.to_string()),
    ]
}

/// A permutation of 0..n, written in one of the accepted forms or slightly broken.
fn near_valid() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(9usize), Just(16), Just(25)],
        any::<u64>(),
        0u8..6,
    )
        .prop_map(|(n, seed, damage)| {
            let mut tiles: Vec<usize> = (0..n).collect();
            let mut state = seed | 1;
            for i in (1..n).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                tiles.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let text: Vec<String> = tiles.iter().map(usize::to_string).collect();
            let side = (n as f64).sqrt() as usize;
            match damage {
                0 => text.join(","),
                1 => text.join(" "),
                2 => format!(
                    "{{{}}}",
                    text.chunks(side)
                        .map(|row| format!("{{{}}}", row.join(",")))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                3 => text[1..].join(","),
                4 => format!("{},{}", text.join(","), tiles[0]),
                _ => text.join(",,"),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_as_a_batch_file(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        for line in board_lines(&text) {
            check(line.board);
        }
    }

    #[test]
    fn pieces_of_board_text(pieces in proptest::collection::vec(piece(), 0..60)) {
        let text = pieces.concat();
        check(&text);
        if let Some(line) = BatchLine::read(1, &text) {
            check(line.board);
            let _ = line.fact("optimal");
        }
    }

    #[test]
    fn near_valid_boards(text in near_valid()) {
        check(&text);
    }
}

#[test]
fn odd_files_give_an_error_per_line() {
    let mut bytes = b"\xef\xbb\xbf1,2,3,4,5,6,7,8,0\r\n".to_vec();
    bytes.extend_from_slice(b"1,2,\xff\xfe,4\r\n");
    bytes.extend_from_slice(&[0u8, 1, 2, 3, b'\n']);
    bytes.extend_from_slice("9,".repeat(100_000).as_bytes());
    bytes.extend_from_slice(b"\n8,6,7,2,5,4,3,0,1 # optimal=31\n");
    let text = String::from_utf8_lossy(&bytes);
    let outcomes: Vec<(usize, Result<String, String>)> = board_lines(&text)
        .map(|line| {
            (
                line.number,
                parse_board(line.board)
                    .map(|b| b.to_string())
                    .map_err(|e| e.to_string()),
            )
        })
        .collect();
    assert_eq!(outcomes.len(), 5);
    assert_eq!(
        outcomes[0],
        (1, Ok("1,2,3,4,5,6,7,8,0".into())),
        "BOM and CRLF"
    );
    assert_eq!(
        outcomes[1],
        (
            2,
            Err("bytes that are not UTF-8 text at column 5 (is this a binary file?)".into())
        )
    );
    assert_eq!(outcomes[2], (3, Err("unexpected '\\0' at column 1".into())));
    assert_eq!(
        outcomes[3],
        (
            4,
            Err("200000 characters is far too long for a board (at most 1000)".into())
        )
    );
    assert_eq!(outcomes[4], (5, Ok("8,6,7,2,5,4,3,0,1".into())));
}
