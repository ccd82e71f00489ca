//! Text from outside (a submitted line, an argument, a name in a request) as a message shows
//! it: control characters escaped, so that it cannot drive the terminal of whoever reads it
//! (an escape sequence that recolours or clears it, a carriage return that hides what came
//! before), and, where it is quoted in an error, cut to [`EXCERPT_CHARS`] characters, so that
//! a refusal never replays a 15 MB argument.

use std::borrow::Cow;

/// The most characters of a refused value an error quotes.
pub const EXCERPT_CHARS: usize = 200;

/// `text` with its control characters written as `\u{1b}`-style escapes.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(escaped).collect())
}

/// `text` as an error quotes it: [`printable`], and past [`EXCERPT_CHARS`] characters cut,
/// with its whole length said.
pub fn excerpt(text: &str) -> String {
    let mut shown: String = text.chars().take(EXCERPT_CHARS).map(escaped).collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        shown.push_str(&format!("... ({} bytes in all)", text.len()));
    }
    shown
}

/// `message` with each stretch between two quote marks longer than [`QUOTED_MOST`]
/// characters cut as [`excerpt`] cuts it: for messages that quote a refused value whole, as
/// the command line parser's do (what they say around it is far shorter).
pub fn quotes_cut(message: &str) -> String {
    message
        .split('\'')
        .map(|part| match part.chars().nth(QUOTED_MOST).is_some() {
            true => excerpt(part),
            false => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("'")
}

/// The longest stretch [`quotes_cut`] leaves whole.
const QUOTED_MOST: usize = 1_000;

fn escaped(c: char) -> String {
    match c.is_control() {
        true => c.escape_unicode().to_string(),
        false => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_is_kept() {
        assert_eq!(printable("1,2,3 # id=\u{e9}"), "1,2,3 # id=\u{e9}");
        assert_eq!(printable("\u{1b}[31mred\r"), "\\u{1b}[31mred\\u{d}");
    }

    #[test]
    fn an_excerpt_is_cut_and_says_how_long_the_whole_was() {
        assert_eq!(excerpt("pdb:\u{7}x"), "pdb:\\u{7}x");
        let long = "x".repeat(15 << 20);
        let shown = excerpt(&long);
        assert!(shown.starts_with(&"x".repeat(EXCERPT_CHARS)));
        assert!(shown.ends_with("... (15728640 bytes in all)"), "{shown}");
        assert_eq!(
            excerpt(&"y".repeat(EXCERPT_CHARS)),
            "y".repeat(EXCERPT_CHARS)
        );
        let message = format!(
            "invalid value '{}' for '--heuristic': it's not",
            "z".repeat(1_999)
        );
        assert_eq!(
            quotes_cut(&message),
            format!(
                "invalid value '{}... (1999 bytes in all)' for '--heuristic': it's not",
                "z".repeat(EXCERPT_CHARS)
            )
        );
    }
}
