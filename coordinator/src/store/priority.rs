//! A batch's priority: stored with the batch, and the first key of the ready queue.

use serde::{Deserialize, Serialize};

/// A batch's priority, 1 (lowest) to 5 (highest); 3 unless the submission names one. The
/// scheduler hands out a higher priority's tasks first, whatever was submitted before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Priority(u8);

impl Priority {
    pub const LOWEST: Priority = Priority(1);
    pub const DEFAULT: Priority = Priority(3);
    pub const HIGHEST: Priority = Priority(5);

    /// The priority a request gives (0 for the default), checked: the reason names the field.
    pub fn from_request(priority: u32) -> Result<Priority, String> {
        match priority {
            0 => Ok(Priority::DEFAULT),
            _ => u8::try_from(priority)
                .map_err(|_| ())
                .and_then(|p| Priority::try_from(p).map_err(|_| ()))
                .map_err(|()| {
                    format!("priority must be 1 to 5 (or 0 for the default, 3), not {priority}")
                }),
        }
    }

    pub fn get(self) -> u8 {
        self.0
    }

    pub fn is_default(&self) -> bool {
        *self == Priority::DEFAULT
    }
}

impl Default for Priority {
    fn default() -> Self {
        Priority::DEFAULT
    }
}

impl TryFrom<u8> for Priority {
    type Error = String;

    fn try_from(priority: u8) -> Result<Self, Self::Error> {
        match priority {
            1..=5 => Ok(Priority(priority)),
            _ => Err(format!("a priority is 1 to 5, not {priority}")),
        }
    }
}

impl From<Priority> for u8 {
    fn from(priority: Priority) -> u8 {
        priority.0
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_priority_is_one_to_five_and_zero_means_the_default() {
        assert_eq!(Priority::from_request(0), Ok(Priority::DEFAULT));
        assert_eq!(Priority::from_request(5), Ok(Priority::HIGHEST));
        for wrong in [6, 256, u32::MAX] {
            let refused = Priority::from_request(wrong).unwrap_err();
            assert!(refused.contains("priority must be 1 to 5"), "{refused}");
        }
        assert!(serde_json::from_str::<Priority>("9").is_err());
    }
}
