//! Pattern databases: built tables against breadth-first truth on 3x3, admissibility and optimal
//! lengths on 4x4 with the small presets, reproducible builds, and refusal of bad files.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use tilesolve::board::Position;
use tilesolve::heuristic::Heuristic;
use tilesolve::heuristic_choice::AnyHeuristic;
use tilesolve::pdb::{AdditivePdb, PatternSpec, PatternTable, PdbEvent, PdbStore, Preset};
use tilesolve::{Board, Direction, Shape, SolveOptions, Solver};

fn quiet(_: PdbEvent<'_>) {}

/// Every 3x3 board reachable from `goal`, with its distance.
fn bfs(goal: &Board) -> HashMap<Board, u32> {
    let mut distance = HashMap::from([(*goal, 0)]);
    let mut queue = std::collections::VecDeque::from([*goal]);
    while let Some(board) = queue.pop_front() {
        let d = distance[&board];
        for direction in Direction::ALL {
            if let Some((child, _)) = board.apply(direction) {
                distance.entry(child).or_insert_with(|| {
                    queue.push_back(child);
                    d + 1
                });
            }
        }
    }
    distance
}

#[test]
fn exact_3x3_table_equals_breadth_first_search() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    for goal in [Board::blank_last(3), Board::blank_first(3)] {
        let exact: AdditivePdb = store.heuristic(preset("exact"), &goal, &quiet).unwrap();
        let truth = bfs(&goal);
        assert_eq!(truth.len(), 181_440);
        for (board, d) in &truth {
            assert_eq!(exact.estimate(&Position::new(board)), *d, "{board}");
        }
    }
}

#[test]
/// Not consistent: a table entry is the minimum over the blank's regions, so one move can change
/// a term by more than one. IDA* needs only admissibility.
fn partitioned_3x3_tables_are_admissible() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let goal = Board::blank_last(3);
    let truth = bfs(&goal);
    let partitions = [
        vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]],
        vec![vec![1, 2, 4], vec![3, 5, 6], vec![7, 8]],
    ];
    let heuristic = |zero_aware: bool, sets: &[Vec<usize>]| {
        let tables = partitions
            .concat()
            .into_iter()
            .map(|tiles| {
                let spec = PatternSpec {
                    goal,
                    tiles,
                    zero_aware,
                };
                store.table(&spec, &quiet).unwrap()
            })
            .collect();
        AdditivePdb::<8>::new(&goal, tables, sets, true)
    };
    let (first, second) = (vec![0, 1], vec![2, 3, 4]);
    let single = [first.clone()];
    let both = [first, second];
    for pdb in [
        heuristic(false, &single),
        heuristic(false, &both),
        heuristic(true, &both),
    ] {
        assert!(pdb.reflects(), "the default goal is its own mirror image");
        for (board, d) in &truth {
            let h = pdb.estimate(&Position::new(board));
            assert!(h <= *d, "{board}: {h} > {d}");
        }
    }
    // More sets and zero-aware entries only ever raise the estimate, and on some boards do.
    let (weak, mid, strong) = (
        heuristic(false, &single),
        heuristic(false, &both),
        heuristic(true, &both),
    );
    let (mut raised_by_sets, mut raised_by_zero) = (0, 0);
    for board in truth.keys() {
        let position = Position::new(board);
        let (w, m, z) = (
            weak.estimate(&position),
            mid.estimate(&position),
            strong.estimate(&position),
        );
        assert!(w <= m && m <= z, "{board}: {w} {m} {z}");
        raised_by_sets += usize::from(w < m);
        raised_by_zero += usize::from(m < z);
    }
    assert!(raised_by_sets > 0 && raised_by_zero > 0);
}

/// The kernel's question, "is this child within the limit?", answered lazily (the largest set at
/// the parent read first, the rest only for a kept child), agrees with evaluating every term:
/// a kept child gets the full estimate, a cut one a bound over the limit and never over the
/// estimate. Checked on every 3x3 move, for placement-only tables (packed and at a byte an
/// entry) and zero-aware ones (by blank cell and by region), with the first read located by the
/// prefetch and without it.
#[test]
fn lazy_limit_checks_agree_with_full_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let goal = Board::blank_last(3);
    let patterns = [
        vec![1, 2, 4],
        vec![3, 5, 6],
        vec![7, 8],
        vec![1, 2, 3, 4],
        vec![5, 6, 7, 8],
    ];
    // Two sets on the board and its mirror image (each move changes several tables: the rest
    // located after the first read), one set (each move changes one table on each side: the
    // other read located with the first) and one set without the mirror (nothing else to read).
    // Given as the patterns used, then the sets as indices into them.
    let layouts: [(usize, &[Vec<usize>], bool); 3] = [
        (5, &[vec![0, 1, 2], vec![3, 4]], true),
        (3, &[vec![0, 1, 2]], true),
        (3, &[vec![0, 1, 2]], false),
    ];
    let copies = tempfile::tempdir().unwrap();
    for (encoding, (used, sets, reflect)) in [
        Encoding::Packed,
        Encoding::Bytes,
        Encoding::ZeroAware,
        Encoding::ZeroRegions,
    ]
    .into_iter()
    .flat_map(|encoding| layouts.map(|layout| (encoding, layout)))
    {
        let tables = encoding.tables(&store, &goal, &patterns[..used], copies.path());
        let pdb = AdditivePdb::<8>::new(&goal, tables, sets, reflect);
        let (mut kept, mut cut) = check_lazy_limits(&pdb, &goal);
        // A partition (the one-set layouts) is solved through its own form: checked the same.
        let lean = [
            pdb.partitioned()
                .map(|lean| check_lazy_limits(&lean, &goal)),
            pdb.partitioned_by_blank()
                .map(|lean| check_lazy_limits(&lean, &goal)),
        ];
        for (more_kept, more_cut) in lean.into_iter().flatten() {
            kept += more_kept;
            cut += more_cut;
        }
        assert!(kept > 0 && cut > 0);
    }
}

/// How a test's tables hold their entries.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Encoding {
    /// Half a byte a placement, as the store builds placement tables.
    Packed,
    /// A byte a placement, as earlier versions built them: copies of the packed tables.
    Bytes,
    /// Zero-aware, as the store builds them on boards of at most 16 cells: packed, by blank cell.
    ZeroAware,
    /// Zero-aware at a byte per placement and blank region, as the store builds them on 5x5.
    ZeroRegions,
}

impl Encoding {
    /// The tables of `patterns` for `goal` in this encoding (byte copies are written to `copies`).
    fn tables(
        self,
        store: &PdbStore,
        goal: &Board,
        patterns: &[Vec<u8>],
        copies: &std::path::Path,
    ) -> Vec<Arc<PatternTable>> {
        if self == Encoding::ZeroRegions {
            return patterns
                .iter()
                .map(|tiles| region_table(goal, tiles, copies))
                .collect();
        }
        let tables = tables_for(store, goal, patterns, self == Encoding::ZeroAware);
        assert!(tables.iter().all(|table| table.packed), "{self:?}");
        match self {
            Encoding::Bytes => tables
                .iter()
                .map(|table| byte_copy(table, copies))
                .collect(),
            _ => tables,
        }
    }
}

/// The zero-aware table of `tiles` for `goal` at a byte per placement and blank region (the
/// layout the store keeps for 5x5), built and written into `dir`, and loaded from there.
fn region_table(goal: &Board, tiles: &[u8], dir: &std::path::Path) -> Arc<PatternTable> {
    let spec = PatternSpec {
        goal: *goal,
        tiles: tiles.to_vec(),
        zero_aware: true,
    };
    let values = tilesolve::pdb::builder::build(goal, tiles, true, 2, &|_| {}).unwrap();
    let path = dir.join(spec.file_name());
    tilesolve::pdb::file::write(&path, &spec, &values, false).unwrap();
    let table = tilesolve::pdb::file::load(&path, &spec, true).unwrap();
    assert!(!table.packed);
    Arc::new(table)
}

/// `table` (packed) written at a byte a placement into `dir`, and loaded from there.
fn byte_copy(table: &PatternTable, dir: &std::path::Path) -> Arc<PatternTable> {
    assert!(table.packed);
    let spec = &table.spec;
    let values: Vec<u8> = (0..spec.entries() as u32)
        .map(|index| table.value(index))
        .collect();
    let path = dir.join(spec.file_name());
    tilesolve::pdb::file::write(&path, spec, &values, false).unwrap();
    let copy = tilesolve::pdb::file::load(&path, spec, true).unwrap();
    assert!(!copy.packed);
    Arc::new(copy)
}

/// The tables of `patterns` for `goal`, built into `store` the first time.
fn tables_for(
    store: &PdbStore,
    goal: &Board,
    patterns: &[Vec<u8>],
    zero_aware: bool,
) -> Vec<Arc<PatternTable>> {
    patterns
        .iter()
        .map(|tiles| {
            let spec = PatternSpec {
                goal: *goal,
                tiles: tiles.clone(),
                zero_aware,
            };
            store.table(&spec, &quiet).unwrap()
        })
        .collect()
}

/// Checks `heuristic`'s lazy limit check against its full evaluation on every move of every
/// 3x3 board; returns how many checks kept the child and how many cut it.
fn check_lazy_limits<H: Heuristic>(heuristic: &H, goal: &Board) -> (u32, u32) {
    let (mut kept, mut cut) = (0, 0);
    for board in bfs(goal).keys() {
        let state = heuristic.init(&Position::new(board));
        for direction in Direction::ALL {
            let Some((child, tile)) = board.apply(direction) else {
                continue;
            };
            let position = Position::new(&child);
            let (from, to) = (child.blank(), board.blank());
            let full = heuristic.value(heuristic.after_move(&position, state, tile, from, to));
            assert_eq!(full, heuristic.estimate(&position), "{child}");
            // The first read located by the prefetch, and located by the check itself.
            let parent = Position::new(board);
            let located = heuristic.prefetch_child(&parent, state, tile, from, to);
            for probe in [located, Default::default()] {
                for limit in full.saturating_sub(2)..=full + 1 {
                    match heuristic
                        .after_move_within(&position, state, tile, from, to, limit, probe)
                    {
                        Ok((within, h)) => {
                            assert!(full <= limit && h == full, "{child} limit {limit}");
                            assert_eq!(heuristic.value(within), full, "{child}");
                            kept += 1;
                        }
                        Err(bound) => {
                            assert!(limit < bound && bound <= full, "{child} limit {limit}");
                            cut += 1;
                        }
                    }
                }
            }
        }
    }
    (kept, cut)
}

/// The form a partition is solved through keeps each side's sum and each table's rank as a walk
/// goes on (ranks stepped on the side the move is horizontal on, ranked on the other; children
/// located by the prefetch or not, and plain moves), and its value stays the general path's.
#[test]
fn partitioned_state_agrees_with_the_general_path_over_a_walk() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    for (side, patterns) in [
        (3, vec![vec![1, 2, 4], vec![3, 5, 6], vec![7, 8]]),
        (
            4,
            vec![
                vec![1, 2, 5, 6, 9],
                vec![3, 4, 7, 8],
                vec![10, 11, 12, 13, 14, 15],
            ],
        ),
    ] {
        let goal = Board::blank_last(side);
        let copies = tempfile::tempdir().unwrap();
        for (encoding, reflect) in [
            (Encoding::Packed, true),
            (Encoding::Packed, false),
            (Encoding::Bytes, true),
            (Encoding::ZeroAware, true),
            (Encoding::ZeroAware, false),
            (Encoding::ZeroRegions, true),
        ] {
            if encoding == Encoding::ZeroRegions && side == 4 {
                continue;
            }
            let tables = encoding.tables(&store, &goal, &patterns, copies.path());
            let set: Vec<usize> = (0..patterns.len()).collect();
            let general = AdditivePdb::<8>::new(&goal, tables, std::slice::from_ref(&set), reflect);
            let by_blank = general.partitioned_by_blank();
            assert_eq!(by_blank.is_some(), encoding == Encoding::ZeroAware);
            match (general.partitioned(), by_blank) {
                (Some(lean), None) => walk_agrees(&general, &lean, &goal),
                (None, Some(lean)) => walk_agrees(&general, &lean, &goal),
                _ => panic!("one set over every tile is one partitioned form"),
            }
        }
    }
    // Two sets are no partition: solved through the general path.
    let goal = Board::blank_last(3);
    let tables = tables_for(&store, &goal, &[vec![1, 2, 3, 4], vec![5, 6, 7, 8]], false);
    let two_sets = AdditivePdb::<8>::new(&goal, tables, &[vec![0, 1], vec![1, 0]], true);
    assert!(two_sets.partitioned().is_none());
}

/// Walks 5,000 random moves from `goal`, checking that `lean`'s state stays the one `init`
/// gives and its value the estimate of `general`.
fn walk_agrees<H>(general: &AdditivePdb<8>, lean: &H, goal: &Board)
where
    H: Heuristic,
    H::State: PartialEq + std::fmt::Debug,
{
    let mut board = *goal;
    let mut state = lean.init(&Position::new(&board));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for step in 0..5_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let Some((child, tile)) = board.apply(Direction::ALL[(seed % 4) as usize]) else {
            continue;
        };
        let (parent, position) = (Position::new(&board), Position::new(&child));
        let (from, to) = (child.blank(), board.blank());
        let probe = match step % 3 {
            0 => lean.prefetch_child(&parent, state, tile, from, to),
            _ => Default::default(),
        };
        state = match step % 3 {
            2 => lean.after_move(&position, state, tile, from, to),
            _ => {
                let within =
                    lean.after_move_within(&position, state, tile, from, to, u32::MAX, probe);
                within.unwrap().0
            }
        };
        board = child;
        let expected = general.estimate(&position);
        assert_eq!(lean.value(state), expected, "step {step}: {board}");
        assert_eq!(state, lean.init(&position), "step {step}: {board}");
    }
}

/// A table at a byte a placement (as earlier versions built them) gives the estimates its packed
/// form gives, and a store that finds one rewrites it packed (the same file a build writes), when
/// it loads it or, for every such table in its directory, when a process starts.
#[test]
fn byte_tables_agree_with_packed_ones_and_are_repacked_on_load() {
    let (built, copies) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = PdbStore::new(built.path(), 2);
    let goal = Board::blank_last(3);
    let patterns = [vec![1, 2, 4], vec![3, 5, 6], vec![7, 8]];
    let packed = Encoding::Packed.tables(&store, &goal, &patterns, copies.path());
    let bytes = Encoding::Bytes.tables(&store, &goal, &patterns, copies.path());
    let set = [vec![0, 1, 2]];
    let from_packed = AdditivePdb::<8>::new(&goal, packed.clone(), &set, true);
    let from_bytes = AdditivePdb::<8>::new(&goal, bytes, &set, true);
    for board in bfs(&goal).keys() {
        let position = Position::new(board);
        assert_eq!(
            from_packed.estimate(&position),
            from_bytes.estimate(&position),
            "{board}"
        );
    }
    let repacked = Mutex::new(0);
    let count = |event: PdbEvent<'_>| {
        if let PdbEvent::Packed { .. } = event {
            *repacked.lock().unwrap() += 1;
        }
    };
    let copied = PdbStore::new(copies.path(), 2);
    for table in &packed {
        let again = copied.table(&table.spec, &count).unwrap();
        assert!(again.packed);
        assert_eq!(again.checksum, table.checksum, "{:?}", table.spec.tiles);
        let size = std::fs::metadata(copied.path_of(&table.spec))
            .unwrap()
            .len();
        assert_eq!(size, 128 + table.spec.entries().div_ceil(2));
    }
    assert_eq!(*repacked.lock().unwrap(), patterns.len());
    // As a worker or coordinator starts: every byte table in the directory, once.
    let older = tempfile::tempdir().unwrap();
    Encoding::Bytes.tables(&store, &goal, &patterns, older.path());
    let older = PdbStore::new(older.path(), 2);
    assert_eq!(older.repack_present(&quiet).unwrap(), patterns.len());
    assert_eq!(older.repack_present(&quiet).unwrap(), 0);
}

/// A zero-aware table refines a placement-only one: over a placement's blank regions, the least
/// zero-aware entry is the placement's entry.
#[test]
fn zero_aware_entries_refine_placement_entries() {
    use tilesolve::pdb::index::{placements, Unranker};
    use tilesolve::pdb::zero_index::{flood, ZeroIndex};
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let goal = Board::blank_last(4);
    let tiles = vec![1, 2, 5, 6, 9];
    let spec = |zero_aware| PatternSpec {
        goal,
        tiles: tiles.clone(),
        zero_aware,
    };
    let placement = store.table(&spec(false), &quiet).unwrap();
    let zero = region_table(&goal, &tiles, dir.path());
    let index = ZeroIndex::new(4, tiles.len());
    assert_eq!(zero.len() as u64, index.entries());
    let unranker = Unranker::new(16, tiles.len());
    let (mut cells, mut digits) = ([0u8; 8], [0u8; 8]);
    let mut stronger = 0;
    for rank in 0..placements(16, tiles.len()) as u32 {
        unranker.unrank(rank, &mut cells, &mut digits);
        let cells = &cells[..tiles.len()];
        let free = 0xffff & !cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let mut rest = free;
        let mut least = u8::MAX;
        while rest != 0 {
            let region = flood(rest & rest.wrapping_neg(), free, Shape::square(4));
            rest &= !region;
            let blank = region.trailing_zeros() as u8;
            let value = index.value(zero.entries(), cells.iter().copied(), blank);
            stronger += usize::from(value > placement.value(rank));
            least = least.min(value);
        }
        assert_eq!(least, placement.value(rank), "{cells:?}");
    }
    assert!(stronger > 0);
}

#[test]
fn small_4x4_presets_give_optimal_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let korf_goal = Board::blank_first(4);
    let mut instances = common::instances("korf100.txt");
    for preset in [preset("5-5-5"), preset("4-4-4-3")] {
        let pdb = Arc::new(store.heuristic(preset, &korf_goal, &quiet).unwrap());
        for instance in &instances {
            let h = pdb.estimate(&Position::new(&instance.board));
            assert!(
                h as usize <= instance.optimal,
                "{preset} #{}: {h} > {}",
                instance.id,
                instance.optimal
            );
        }
        let solver =
            Solver::with_heuristic(korf_goal, AnyHeuristic::Pdb(pdb), format!("pdb:{preset}"));
        instances.sort_by_key(|i| i.korf1985_nodes);
        for instance in instances.iter().take(12) {
            let solution = solver
                .solve(&instance.board, &SolveOptions::default(), None)
                .unwrap();
            assert_eq!(
                solution.len(),
                instance.optimal,
                "{preset} #{}",
                instance.id
            );
        }
    }
    let examples = common::instances("examples15.txt");
    let blank_last = Board::blank_last(4);
    let pdb = store
        .heuristic(preset("5-5-5"), &blank_last, &quiet)
        .unwrap();
    let solver = Solver::with_heuristic(blank_last, AnyHeuristic::Pdb(Arc::new(pdb)), "pdb:5-5-5");
    for instance in &examples {
        let solution = solver
            .solve(&instance.board, &SolveOptions::default(), None)
            .unwrap();
        assert_eq!(
            solution.len(),
            instance.optimal,
            "5-5-5 on examples15 #{}",
            instance.id
        );
    }
}

#[test]
fn builds_are_reproducible_across_thread_counts() {
    for zero_aware in [false, true] {
        let spec = PatternSpec {
            goal: Board::blank_last(4),
            tiles: vec![1, 2, 5, 6, 9],
            zero_aware,
        };
        let checksums: Vec<u64> = [1, 2, 3]
            .into_iter()
            .map(|threads| {
                let dir = tempfile::tempdir().unwrap();
                PdbStore::new(dir.path(), threads)
                    .build(&spec, &quiet)
                    .unwrap()
                    .checksum
            })
            .collect();
        assert_eq!(checksums[0], checksums[1]);
        assert_eq!(checksums[0], checksums[2]);
    }
}

#[test]
fn corrupt_or_mismatched_files_are_refused_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let spec = PatternSpec {
        goal: Board::blank_last(4),
        tiles: vec![1, 2, 3],
        zero_aware: false,
    };
    let good = store.table(&spec, &quiet).unwrap().checksum;
    let path = store.path_of(&spec);

    let refusals = Mutex::new(Vec::new());
    let record = |event: PdbEvent<'_>| {
        if let PdbEvent::Refused { error } = event {
            refusals.lock().unwrap().push(error.to_string());
        }
    };
    // Flip one byte of the entries.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(store.table(&spec, &record).unwrap().checksum, good);
    // Truncate it.
    std::fs::write(&path, &bytes[..1000]).unwrap();
    assert_eq!(store.table(&spec, &record).unwrap().checksum, good);
    // Put another pattern's file in its place.
    let other = PatternSpec {
        goal: Board::blank_last(4),
        tiles: vec![1, 2, 4],
        zero_aware: false,
    };
    store.table(&other, &quiet).unwrap();
    std::fs::copy(store.path_of(&other), &path).unwrap();
    assert_eq!(store.table(&spec, &record).unwrap().checksum, good);
    // Garbage.
    std::fs::write(&path, b"not a table").unwrap();
    assert_eq!(store.table(&spec, &record).unwrap().checksum, good);

    let refusals = refusals.into_inner().unwrap();
    assert_eq!(refusals.len(), 4, "{refusals:?}");
    assert!(refusals[0].contains("checksum mismatch"), "{}", refusals[0]);
    assert!(refusals[1].contains("bytes of entries"), "{}", refusals[1]);
    assert!(
        refusals[2].contains("for something else"),
        "{}",
        refusals[2]
    );
    assert!(
        refusals[3].contains("no tilesolve pattern database header"),
        "{}",
        refusals[3]
    );
}

/// A preset's tables are loaded side by side, and one that does not load is left to the usual
/// path: refused, rebuilt, and the heuristic the same as from intact files.
#[test]
fn a_presets_tables_load_side_by_side_and_a_bad_one_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let store = PdbStore::new(dir.path(), 2);
    let goal = Board::blank_last(4);
    let intact = store
        .heuristic::<8>(preset("5-5-5"), &goal, &quiet)
        .unwrap();
    let specs = PdbStore::specs(preset("5-5-5"), &goal).unwrap();
    assert_eq!(specs.len(), 3);
    let damaged = store.path_of(&specs[1]);
    let mut bytes = std::fs::read(&damaged).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&damaged, &bytes).unwrap();

    let events = Mutex::new(Vec::new());
    let record = |event: PdbEvent<'_>| {
        let name = match event {
            PdbEvent::Loaded { .. } => "loaded",
            PdbEvent::Refused { .. } => "refused",
            PdbEvent::Built { .. } => "built",
            _ => return,
        };
        events.lock().unwrap().push(name);
    };
    let reloaded = store
        .heuristic::<8>(preset("5-5-5"), &goal, &record)
        .unwrap();
    let mut events = events.into_inner().unwrap();
    events.sort_unstable();
    assert_eq!(events, ["built", "loaded", "loaded", "refused"]);
    for instance in common::instances("examples15.txt") {
        let position = Position::new(&instance.board);
        assert_eq!(reloaded.estimate(&position), intact.estimate(&position));
    }
}

fn preset(name: &str) -> Preset {
    name.parse().unwrap()
}

/// The presets are one list: the parser, `default`, the table store, the help and the README
/// all follow the registry (a preset added to it needs nothing else; the module's doc example
/// adds one to a copy of the registry and parses, lays out and names it).
#[test]
fn every_preset_of_the_registry_is_parsed_named_stored_and_documented() {
    use tilesolve::heuristic_choice::HeuristicChoice;
    use tilesolve::pdb::PRESETS;
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let help = HeuristicChoice::help();
    for named in PRESETS {
        let preset = preset(named.name);
        assert_eq!(preset.name(), named.name);
        assert_eq!(preset.square_side(), Some(named.side));
        let choice: HeuristicChoice = format!("pdb:{}", named.name).parse().unwrap();
        assert_eq!(choice, HeuristicChoice::Pdb(preset));
        let specs = PdbStore::specs(preset, &Board::blank_last(named.side)).unwrap();
        assert_eq!(specs.len(), preset.tables(), "{}", named.name);
        assert!(help.contains(named.help), "the help misses {}", named.name);
        assert!(
            readme.contains(&format!("`pdb:{}`", named.name)),
            "README.md does not name pdb:{}",
            named.name
        );
        if named.default_rank.is_some() {
            assert!(Preset::by_strength(named.side).contains(&preset));
        }
    }
    let unknown = "pdb:no-such"
        .parse::<HeuristicChoice>()
        .unwrap_err()
        .to_string();
    assert!(
        PRESETS.iter().all(|named| unknown.contains(named.name)),
        "{unknown}"
    );
}
