//! A heuristic scaled by a weight w > 1: IDA* on it is weighted IDA*, which reaches a goal far
//! sooner and proves nothing about the path's length beyond w times the optimal one (Korf's
//! bound for f = g + w h with an admissible h). Its answers are never optimal ones: the solver
//! hands them out as bounded answers, beside the lower bound the admissible search proved.
//!
//! The scaled estimate is `floor(h * w)`, zero exactly where `h` is (so the goal test holds);
//! a child's bound `limit` on it becomes the largest `h` whose scaled value is within `limit`,
//! so the inner heuristic's own early exits and prefetches work unchanged.

use crate::board::Position;
use crate::heuristic::Heuristic;

/// A weight as a fraction, e.g. 5/4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weight {
    numerator: u32,
    denominator: u32,
}

impl Weight {
    /// `numerator / denominator`; `None` unless it is at least 1 and both parts are small
    /// enough that a scaled estimate cannot overflow (at most 1,000).
    pub fn new(numerator: u32, denominator: u32) -> Option<Weight> {
        (denominator > 0 && numerator >= denominator && numerator <= 1000).then_some(Weight {
            numerator,
            denominator,
        })
    }

    pub fn as_f64(self) -> f64 {
        f64::from(self.numerator) / f64::from(self.denominator)
    }

    /// The weight in hundredths, rounded (150 for 3/2).
    pub fn percent(self) -> u32 {
        (self.numerator * 100 + self.denominator / 2) / self.denominator
    }

    /// `h` times this weight, rounded down.
    pub fn scale(self, h: u32) -> u32 {
        h * self.numerator / self.denominator
    }

    /// The largest `h` whose scaled value is at most `limit`.
    fn unscaled_limit(self, limit: u32) -> u32 {
        ((u64::from(limit) + 1) * u64::from(self.denominator) - 1)
            .checked_div(u64::from(self.numerator))
            .map_or(u32::MAX, |h| u32::try_from(h).unwrap_or(u32::MAX))
    }
}

/// `inner` scaled by `weight`.
#[derive(Clone, Copy, Debug)]
pub struct Weighted<'a, H> {
    inner: &'a H,
    weight: Weight,
}

impl<'a, H: Heuristic> Weighted<'a, H> {
    pub fn new(inner: &'a H, weight: Weight) -> Self {
        Weighted { inner, weight }
    }
}

impl<H: Heuristic> Heuristic for Weighted<'_, H> {
    type State = H::State;
    type Probe = H::Probe;
    const PREFETCHES: bool = H::PREFETCHES;

    fn init(&self, position: &Position) -> Self::State {
        self.inner.init(position)
    }

    fn value(&self, state: Self::State) -> u32 {
        self.weight.scale(self.inner.value(state))
    }

    fn after_move(
        &self,
        position: &Position,
        state: Self::State,
        tile: u8,
        from: usize,
        to: usize,
    ) -> Self::State {
        self.inner.after_move(position, state, tile, from, to)
    }

    #[inline(always)]
    fn prefetch_child(
        &self,
        position: &Position,
        state: Self::State,
        tile: u8,
        from: usize,
        to: usize,
    ) -> Self::Probe {
        self.inner.prefetch_child(position, state, tile, from, to)
    }

    #[inline(always)]
    fn after_move_within(
        &self,
        position: &Position,
        state: Self::State,
        tile: u8,
        from: usize,
        to: usize,
        limit: u32,
        probe: Self::Probe,
    ) -> Result<(Self::State, u32), u32> {
        match self.inner.after_move_within(
            position,
            state,
            tile,
            from,
            to,
            self.weight.unscaled_limit(limit),
            probe,
        ) {
            Ok((child, h)) => Ok((child, self.weight.scale(h))),
            // Over the unscaled limit, so its scaled value is over `limit`.
            Err(h) => Err(self.weight.scale(h)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unscaled_limit_is_the_largest_estimate_whose_scaled_value_fits() {
        for (numerator, denominator) in [(1, 1), (5, 4), (3, 2), (2, 1), (11, 10), (7, 3)] {
            let weight = Weight::new(numerator, denominator).unwrap();
            for limit in 0..300 {
                let h = weight.unscaled_limit(limit);
                assert!(
                    weight.scale(h) <= limit,
                    "{numerator}/{denominator} {limit}"
                );
                assert!(
                    weight.scale(h + 1) > limit,
                    "{numerator}/{denominator} {limit}"
                );
            }
        }
    }

    #[test]
    fn weights_below_one_or_too_fine_are_refused() {
        assert!(Weight::new(1, 2).is_none());
        assert!(Weight::new(3, 0).is_none());
        assert!(Weight::new(1001, 1000).is_none());
        assert_eq!(Weight::new(5, 4).map(Weight::as_f64), Some(1.25));
    }
}
