//! What both table builders (`builder`, `zero_builder`) stand on: zeroed arrays of atomics in
//! anonymous memory, and each cell's neighbours.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};

use memmap2::MmapMut;

use crate::board::Shape;

/// Atomic integer types, for which all-zero memory is a valid value.
///
/// # Safety
/// Implement only for types whose all-zero bit pattern is a valid value.
pub(super) unsafe trait ZeroIsValid: Sync + Send {}
// SAFETY: atomic integers have the size and bit validity of their integer, and 0 is an integer.
unsafe impl ZeroIsValid for AtomicU8 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU32 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU64 {}

/// A zeroed array in anonymous memory advised to use transparent huge pages. The builder reads
/// and writes gigabytes at random; with 4 KB pages much of that time goes to TLB misses.
pub(super) struct ZeroedArray<T> {
    map: MmapMut,
    len: usize,
    _items: PhantomData<T>,
}

impl<T: ZeroIsValid> ZeroedArray<T> {
    pub(super) fn new(len: usize) -> std::io::Result<Self> {
        let map = MmapMut::map_anon((len * size_of::<T>()).max(1))?;
        // Only advice: where huge pages are unavailable the build is just slower.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(ZeroedArray {
            map,
            len,
            _items: PhantomData,
        })
    }

    /// The memory itself, once the build is done with it.
    pub(super) fn into_map(self) -> MmapMut {
        self.map
    }
}

impl<T: ZeroIsValid> std::ops::Deref for ZeroedArray<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the map is page-aligned (so aligned for T), holds `len` items of T, starts
        // zeroed (valid for T by `ZeroIsValid`), is only accessed through atomics while shared,
        // and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<T>(), self.len) }
    }
}

/// Each cell's neighbours on a board of `shape`, as cell masks.
pub(super) fn adjacent_cells(shape: Shape) -> [u32; 32] {
    let (rows, cols) = (shape.rows(), shape.cols());
    let mut adjacent = [0u32; 32];
    for (cell, mask) in adjacent.iter_mut().enumerate().take(shape.cells()) {
        let (row, col) = (cell / cols, cell % cols);
        if row > 0 {
            *mask |= 1 << (cell - cols);
        }
        if row + 1 < rows {
            *mask |= 1 << (cell + cols);
        }
        if col > 0 {
            *mask |= 1 << (cell - 1);
        }
        if col + 1 < cols {
            *mask |= 1 << (cell + 1);
        }
    }
    adjacent
}
