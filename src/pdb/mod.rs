//! Additive pattern databases: for each disjoint group of tiles, a table of the fewest moves of
//! that group's tiles needed to bring them home from any placement, summed over the groups (and
//! maxed with the same sum on the mirror image). See `builder` for how tables are built, `file`
//! for how they are stored and `store` for the data directory.

mod additive;
pub mod blank_cells;
pub mod builder;
pub mod file;
pub mod index;
mod lookup;
pub mod packed;
mod pages;
mod partition;
mod partitioned;
mod preset;
mod shuffle_rank;
mod store;
pub mod zero_index;

pub use additive::{AdditivePdb, PdbState};
pub use file::{PatternSpec, PatternTable, PdbError};
pub use lookup::{NARROW, WIDE};
pub use pages::TablePages;
pub use partitioned::{ChildRanks, PartitionState, Partitioned};
pub use preset::{default_memory_budget, NamedPreset, Preset, UnknownPreset, PRESETS};
pub use store::{PdbEvent, PdbStore};

/// Asks for the cache line holding `item` without waiting for it.
#[inline(always)]
pub(crate) fn prefetch<T>(item: &T) {
    // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never faults or changes memory.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (item as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}
