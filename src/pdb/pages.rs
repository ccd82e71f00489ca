//! Whether a process's pattern tables are held in 2 MiB pages, as [`file`](super::file) asks
//! of every mapping. The search reads the tables at random, so with 4 KiB pages each read may
//! also walk the page tables (hard80 on the 7-8 tables ran 4-8% slower so, one thread or two;
//! docs/benchmarks/history.md). Whether the advice took depends on the file system (ext4 and xfs hold a
//! file's page cache in large folios on Linux 6.x; tmpfs only when mounted `huge=`) and on how
//! the files came into the cache (a copy by hand caches them in small pages until evicted), so
//! the processes that search report it: a worker's log and `/metrics`, and `bench`'s summary.

use std::fmt;

/// Below this a process's tables are too small for their pages to be worth a word (the 3x3's
/// exact table is 0.4 MB; the 4x4 default, 7-8, 288 MB).
const MATTERS_FROM_BYTES: u64 = 64 << 20;

/// A process's pattern tables, and how much of its file mappings are in 2 MiB pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TablePages {
    /// Bytes of pattern tables the process holds.
    pub table_bytes: u64,
    /// Bytes of its file mappings in 2 MiB pages (Linux's `FilePmdMapped`), at most
    /// `table_bytes`: the tables are the only large files a searching process maps.
    pub huge_bytes: u64,
}

impl TablePages {
    /// This process's reading, beside the `table_bytes` it holds: `None` without tables, or
    /// where `/proc/self/smaps_rollup` cannot be read (other systems, a hidden `/proc`).
    pub fn now(table_bytes: u64) -> Option<TablePages> {
        if table_bytes == 0 {
            return None;
        }
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
        let huge_bytes = file_pmd_mapped(&rollup)?;
        Some(TablePages {
            table_bytes,
            huge_bytes: huge_bytes.min(table_bytes),
        })
    }

    /// The share of the tables in 2 MiB pages, 0 to 1.
    pub fn share(&self) -> f64 {
        self.huge_bytes as f64 / self.table_bytes.max(1) as f64
    }

    /// Tables large enough for their pages to matter, less than half of them in 2 MiB pages:
    /// searches on them run slower than they could.
    pub fn mostly_small(&self) -> bool {
        self.table_bytes >= MATTERS_FROM_BYTES && self.share() < 0.5
    }
}

impl fmt::Display for TablePages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} MB of pattern tables, {:.0}% of them in 2 MiB pages",
            self.table_bytes / 1_000_000,
            100.0 * self.share()
        )
    }
}

/// The `FilePmdMapped` line of a `smaps_rollup` text, in bytes.
fn file_pmd_mapped(rollup: &str) -> Option<u64> {
    let line = rollup
        .lines()
        .find_map(|line| line.strip_prefix("FilePmdMapped:"))?;
    let kilobytes: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kilobytes * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_huge_file_mappings_are_read_from_a_rollup() {
        let rollup = "Rss:             2507876 kB\nAnonHugePages:     24576 kB\n\
                      FilePmdMapped:   2416640 kB\nShared_Hugetlb:        0 kB\n";
        assert_eq!(file_pmd_mapped(rollup), Some(2_416_640 * 1024));
        assert_eq!(file_pmd_mapped("Rss: 12 kB\n"), None);
        assert_eq!(file_pmd_mapped("FilePmdMapped: lots\n"), None);
    }

    #[test]
    fn a_share_is_shown_and_judged() {
        let pages = TablePages {
            table_bytes: 2_534_112_000,
            huge_bytes: 2_474_639_360,
        };
        assert_eq!(
            pages.to_string(),
            "2534 MB of pattern tables, 98% of them in 2 MiB pages"
        );
        assert!(!pages.mostly_small());
        let small = TablePages {
            huge_bytes: 1 << 20,
            ..pages
        };
        assert!(small.mostly_small());
        let tiny = TablePages {
            table_bytes: 1 << 20,
            huge_bytes: 0,
        };
        assert!(!tiny.mostly_small(), "a small table's pages do not matter");
    }

    #[test]
    fn no_tables_no_reading() {
        assert_eq!(TablePages::now(0), None);
        #[cfg(target_os = "linux")]
        {
            let pages = TablePages::now(1 << 30).expect("Linux has /proc/self/smaps_rollup");
            assert!(pages.huge_bytes <= pages.table_bytes);
        }
    }
}
