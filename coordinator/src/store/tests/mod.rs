//! The store on real sled files in temporary directories.
use super::format::{self, board_key, item_key, meta_key, COMPACT};
use super::*;
use tilesolve::heuristic::HeuristicKind;
use tilesolve::{Board, Direction, Shape, Solution};
use tilesolve::{SolveOptions, Solver};

mod answers;
mod task_records;

/// A batch stored as the scheduler's intake stores one: items, then its record.
fn create_batch(store: &Store, goal: &str, items: &[StoredItem], now_unix_ms: u64) -> u64 {
    let id = store.next_batch_id().unwrap();
    store.put_items(id, 0, items).unwrap();
    store
        .put_batch(&StoredBatch::new(
            id,
            items.len(),
            "default",
            goal,
            now_unix_ms,
        ))
        .unwrap();
    id
}

fn item(text: &str) -> StoredItem {
    StoredItem {
        claimed: None,
        text: text.into(),
        line: Some(1),
        board: Some(text.into()),
        goal: None,
        status: ItemStatus::Queued,
    }
}

#[test]
fn a_store_that_cannot_be_opened_is_named_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    std::fs::write(&path, b"not a directory").unwrap();
    let message = Store::open(&path).err().expect("refused").to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
}

/// A pipe in a log's place is refused by name, not opened and waited on.
#[test]
fn a_pipe_in_a_logs_place_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    std::fs::create_dir(&path).unwrap();
    let log = path.join(super::answer_log::LOG_NAME);
    let name = std::ffi::CString::new(log.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file system entry.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let message = Store::open(&path).err().expect("refused").to_string();
    assert!(message.contains("answers.log"), "{message}");
    assert!(message.contains("not a regular file"), "{message}");
}

#[test]
fn a_store_that_lost_flushed_writes_is_refused_by_name_and_opens_for_salvage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    {
        let store = Store::open(&path).unwrap();
        store.flush().unwrap();
        store.flush().unwrap();
    }
    let guard = dir.path().join("store.flushed");
    assert_eq!(std::fs::read_to_string(&guard).unwrap(), "2");
    drop(reopen(&path));
    // As if the store's last flushes were lost after they finished.
    std::fs::write(&guard, "7").unwrap();
    let mut refused = Store::open(&path);
    for _ in 0..100 {
        if !matches!(refused, Err(StoreError::Open { .. })) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        refused = Store::open(&path);
    }
    let message = refused.err().expect("refused").to_string();
    assert!(
        message.contains(&format!("store {}: damaged", path.display()))
            && message.contains("tilesolve salvage --data"),
        "{message}"
    );
    assert!(Store::open_damaged(&path).is_ok());
}

#[test]
fn a_store_of_a_newer_format_is_refused_by_name_and_an_older_one_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
        // As a store from before the format was recorded.
        store.meta.remove(meta_key("format")).unwrap();
        store.flush().unwrap();
    }
    {
        let store = reopen(dir.path());
        assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
        store
            .meta
            .insert(meta_key("format"), &(STORE_FORMAT + 1).to_be_bytes())
            .unwrap();
        store.flush().unwrap();
    }
    let refused = (0..100)
        .find_map(|_| match Store::open(dir.path()) {
            Err(error @ StoreError::Newer { .. }) => Some(error),
            _ => {
                std::thread::sleep(std::time::Duration::from_millis(50));
                None
            }
        })
        .expect("refused as newer");
    let message = refused.to_string();
    assert!(
        message.contains(&dir.path().display().to_string())
            && message.contains(&format!("store format {}", STORE_FORMAT + 1)),
        "{message}"
    );
}

#[test]
fn batch_ids_stay_small_and_sequential_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let store = reopen(dir.path());
        ids.push(create_batch(&store, "blank-last", &[item("1,2,3")], 0));
        ids.push(create_batch(&store, "blank-last", &[item("1,2,3")], 0));
        store.flush().unwrap();
    }
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn batches_survive_reopening_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let store = Store::open(dir.path()).unwrap();
        let id = create_batch(
            &store,
            "blank-last",
            &[item("1,2,3,4,5,6,7,0,8"), item("bad")],
            42,
        );
        store.flush().unwrap();
        let mut second = item("bad");
        second.status = ItemStatus::Failed("unexpected 'b' at column 1".into());
        store.put_item(id, 1, &second).unwrap();
        store.flush().unwrap();
        id
    };
    let store = reopen(dir.path());
    let batch = store.batch(id).unwrap().unwrap();
    assert_eq!((batch.items, batch.submitted_unix_ms), (2, 42));
    let items = store.items(id).unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].status, ItemStatus::Queued);
    assert!(matches!(&items[1].status, ItemStatus::Failed(reason) if reason.contains("column 1")));
    assert_eq!(store.batches().unwrap().len(), 1);
    assert!(store.batch(id + 1).unwrap().is_none());
}

#[test]
fn items_read_as_they_ended_over_their_parts_across_part_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let total = 2 * ITEMS_PER_PART + 5;
    let items: Vec<StoredItem> = (0..total).map(|i| item(&format!("line {i}"))).collect();
    let id = create_batch(&store, "blank-last", &items, 1);
    assert_eq!(store.item_parts.len(), 3);
    let failed = |i: usize| StoredItem {
        status: ItemStatus::Failed(format!("reason {i}")),
        ..items[i].clone()
    };
    let ended = [0, ITEMS_PER_PART - 1, ITEMS_PER_PART, total - 1];
    for &i in &ended {
        store.put_item(id, i as u32, &failed(i)).unwrap();
    }
    let expected: Vec<StoredItem> = (0..total)
        .map(|i| match ended.contains(&i) {
            true => failed(i),
            false => items[i].clone(),
        })
        .collect();
    assert_eq!(store.items(id).unwrap(), expected);
    // Pages starting inside a part and crossing into the next.
    for (start, limit) in [(0, 3), (ITEMS_PER_PART - 2, 4), (total - 2, 10), (total, 5)] {
        let page = store.items_page(id, start as u32, limit).unwrap();
        let want: Vec<(u32, StoredItem)> = (start..total.min(start + limit))
            .map(|i| (i as u32, expected[i].clone()))
            .collect();
        assert_eq!(page, want, "page from {start}");
    }
    assert_eq!(
        store.item(id, ITEMS_PER_PART as u32).unwrap(),
        Some(failed(ITEMS_PER_PART))
    );
    assert_eq!(store.item(id, 7).unwrap(), Some(items[7].clone()));
    assert_eq!(store.item(id, total as u32).unwrap(), None);
    // A batch stored before parts: every item in `items`.
    for i in 0..3u32 {
        store.put_item(id + 1, i, &items[i as usize]).unwrap();
    }
    assert_eq!(store.items(id + 1).unwrap(), items[..3].to_vec());
    assert_eq!(store.next_batch_id().unwrap(), id + 2);
    assert_eq!(store.remove_batch(id, false).unwrap(), (total, 0));
    assert!(store.items(id).unwrap().is_empty());
    assert_eq!(
        (store.item_parts.len(), store.items(id + 1).unwrap().len()),
        (0, 3)
    );
}

#[test]
fn items_held_for_later_read_as_ended_and_reach_their_parts_at_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let total = ITEMS_PER_PART + 3;
    let items: Vec<StoredItem> = (0..total).map(|i| item(&format!("line {i}"))).collect();
    let failed = |i: usize, reason: &str| StoredItem {
        status: ItemStatus::Failed(format!("{reason} {i}")),
        ..items[i].clone()
    };
    let (id, expected) = {
        let store = Store::open(dir.path()).unwrap();
        let id = create_batch(&store, "blank-last", &items, 1);
        // Item 2 ended once on its own: a later end must not hide under that entry.
        store.put_item(id, 2, &failed(2, "first")).unwrap();
        for i in [1, 2, ITEMS_PER_PART - 1, ITEMS_PER_PART + 1] {
            store
                .put_item_later(id, i as u32, failed(i, "held"))
                .unwrap();
        }
        // Item 3 held, then ended on its own: the entry of its own stands.
        store.put_item_later(id, 3, failed(3, "held")).unwrap();
        store.put_item(id, 3, &failed(3, "own")).unwrap();
        let expected: Vec<StoredItem> = (0..total)
            .map(|i| match i {
                3 => failed(i, "own"),
                1 | 2 => failed(i, "held"),
                i if i == ITEMS_PER_PART - 1 || i == ITEMS_PER_PART + 1 => failed(i, "held"),
                _ => items[i].clone(),
            })
            .collect();
        assert_eq!(store.items(id).unwrap(), expected, "held, before a write");
        assert_eq!(store.item(id, 1).unwrap(), Some(failed(1, "held")));
        let page = store.items_page(id, ITEMS_PER_PART as u32, 2).unwrap();
        assert_eq!(
            page[1],
            (
                ITEMS_PER_PART as u32 + 1,
                failed(ITEMS_PER_PART + 1, "held")
            )
        );
        store.flush().unwrap();
        (id, expected)
    };
    let store = reopen(dir.path());
    assert_eq!(
        store.items(id).unwrap(),
        expected,
        "after the flush, from the files"
    );
    assert_eq!(
        store.items.len(),
        2,
        "only the two items that ended on their own"
    );
    // A held item of a removed batch is not written back.
    store.put_item_later(id, 0, failed(0, "held")).unwrap();
    store.remove_batch(id, false).unwrap();
    store.flush().unwrap();
    assert!(store.items(id).unwrap().is_empty());
    assert_eq!((store.items.len(), store.item_parts.len()), (0, 0));
}

/// A part is written once every item of it ended (made of them alone: its stored copy is not
/// read), and not before; one whose items did not all end through the hold waits for a flush.
#[test]
fn a_part_is_written_once_all_its_items_ended_and_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let total = 2 * ITEMS_PER_PART + 5;
    let items: Vec<StoredItem> = (0..total).map(|i| item(&format!("line {i}"))).collect();
    let id = create_batch(&store, "blank-last", &items, 1);
    let failed = |i: usize| StoredItem {
        status: ItemStatus::Failed(format!("reason {i}")),
        ..items[i].clone()
    };
    let stored_part = |first: usize| -> Vec<StoredItem> {
        let bytes = store.item_parts.get(item_key(id, first as u32)).unwrap();
        assert_eq!(
            format::compact_len(bytes.as_ref().unwrap()),
            Some(ITEMS_PER_PART)
        );
        format::decode("item_parts", &bytes.unwrap()).unwrap()
    };
    let (part_1, part_2) = (
        ITEMS_PER_PART..2 * ITEMS_PER_PART,
        2 * ITEMS_PER_PART..total,
    );
    for i in part_1.clone().skip(1).rev() {
        store.put_item_later(id, i as u32, failed(i)).unwrap();
    }
    assert_eq!(stored_part(ITEMS_PER_PART), items[part_1.clone()].to_vec());
    store
        .put_item_later(id, ITEMS_PER_PART as u32, failed(ITEMS_PER_PART))
        .unwrap();
    let ended: Vec<StoredItem> = part_1.clone().map(failed).collect();
    assert_eq!(
        stored_part(ITEMS_PER_PART),
        ended,
        "written at its last end"
    );
    // Item 0 ended on its own: the rest of its part is held until a flush.
    store.put_item(id, 0, &failed(0)).unwrap();
    for i in 1..ITEMS_PER_PART {
        store.put_item_later(id, i as u32, failed(i)).unwrap();
    }
    assert_eq!(stored_part(0), items[..ITEMS_PER_PART].to_vec());
    store.flush().unwrap();
    assert_eq!(
        stored_part(0)[1..],
        (1..ITEMS_PER_PART).map(failed).collect::<Vec<_>>()
    );
    let expected: Vec<StoredItem> = (0..2 * ITEMS_PER_PART)
        .map(failed)
        .chain(items[part_2].iter().cloned())
        .collect();
    assert_eq!(store.items(id).unwrap(), expected);
    assert_eq!(format::compact_len(b"[1,2]"), None);
}

/// A 31-move 8-puzzle, its goal and its solution.
#[test]
fn a_batch_that_ended_takes_its_items_into_its_record_when_small_and_reads_alike() {
    let dir = tempfile::tempdir().unwrap();
    let ended = |i: usize| StoredItem {
        status: ItemStatus::Failed(format!("ended {i}")),
        ..item(&format!("line {i}"))
    };
    let small: Vec<StoredItem> = (0..4).map(|i| item(&format!("line {i}"))).collect();
    let large: Vec<StoredItem> = (0..=EMBEDDED_ITEMS_MAX as usize)
        .map(|i| item(&format!("line {i}")))
        .collect();
    let (small_id, large_id, expected) = {
        let store = Store::open(dir.path()).unwrap();
        let small_id = create_batch(&store, "blank-last", &small, 1);
        let large_id = create_batch(&store, "blank-last", &large, 1);
        for (id, count) in [(small_id, small.len()), (large_id, large.len())] {
            for i in 0..count {
                store.put_item_later(id, i as u32, ended(i)).unwrap();
            }
        }
        // Item 1 ended on its own as well (an answer withdrawn and found again).
        store.put_item(small_id, 1, &ended(9)).unwrap();
        let mut expected: Vec<StoredItem> = (0..4).map(ended).collect();
        expected[1] = ended(9);
        for id in [small_id, large_id] {
            let mut record = store.batch(id).unwrap().unwrap();
            record.finished = Some(BatchFigures {
                solved: 0,
                failed: record.items,
                cancelled: 0,
                nodes: 7,
                seconds: 0.5,
            });
            store.finish_batch(&record).unwrap();
        }
        assert_eq!(store.items(small_id).unwrap(), expected);
        (small_id, large_id, expected)
    };
    let store = reopen(dir.path());
    // Neither record is in sled; the small batch's part went into its record, the large one
    // keeps its part.
    assert_eq!((store.batches.len(), store.finished.len()), (0, 0));
    assert_eq!(
        store
            .item_parts
            .scan_prefix(format::batch_key(small_id))
            .count(),
        0
    );
    assert_eq!(
        store
            .item_parts
            .scan_prefix(format::batch_key(large_id))
            .count(),
        1
    );
    assert_eq!(store.items(small_id).unwrap(), expected);
    assert_eq!(store.item(small_id, 1).unwrap(), Some(ended(9)));
    assert_eq!(
        store.items_page(small_id, 2, 5).unwrap(),
        vec![(2, ended(2)), (3, ended(3))]
    );
    let large_items: Vec<StoredItem> = (0..large.len()).map(ended).collect();
    assert_eq!(store.items(large_id).unwrap(), large_items);
    let record = store.batch(small_id).unwrap().unwrap();
    assert_eq!(record.finished.map(|f| f.nodes), Some(7));
    let running = create_batch(&store, "blank-last", &small, 1);
    let ids = |page: Vec<StoredBatch>| page.iter().map(|batch| batch.id).collect::<Vec<_>>();
    assert_eq!(ids(store.batches().unwrap()), [small_id, large_id, running]);
    assert_eq!(
        ids(store.batches_page(None, 2, true).unwrap()),
        [running, large_id]
    );
    assert_eq!(
        ids(store.batches_page(Some(large_id), 5, true).unwrap()),
        [small_id]
    );
    assert_eq!(
        ids(store.batches_page(Some(small_id), 5, false).unwrap()),
        [large_id, running]
    );
    assert_eq!(store.next_batch_id().unwrap(), running + 1);
    // Reopened (a liar's answer withdrawn), the record keeps its items; removed, it goes.
    store
        .put_batch(&StoredBatch {
            finished: None,
            ..record.clone()
        })
        .unwrap();
    store.put_item(small_id, 2, &ended(8)).unwrap();
    let mut again = expected.clone();
    again[2] = ended(8);
    assert_eq!(store.items(small_id).unwrap(), again);
    store.finish_batch(&record).unwrap();
    assert_eq!(store.items(small_id).unwrap(), again);
    assert_eq!(store.remove_batch(small_id, false).unwrap().0, 4);
    assert!(store.items(small_id).unwrap().is_empty());
    assert_eq!(store.batch(small_id).unwrap(), None);
}

#[test]
fn a_small_batch_is_one_record_whose_ended_items_wait_for_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let ended = |i: usize| StoredItem {
        status: ItemStatus::Failed(format!("ended {i}")),
        ..item(&format!("line {i}"))
    };
    let taken_in: Vec<StoredItem> = (0..4).map(|i| item(&format!("line {i}"))).collect();
    let record = |id: u64| StoredBatch::new(id, taken_in.len(), "default", "blank-last", 1);
    let finish = |store: &Store, id: u64| {
        let mut finished = store.batch(id).unwrap().unwrap();
        finished.finished = Some(BatchFigures {
            solved: 0,
            failed: 4,
            cancelled: 0,
            nodes: 3,
            seconds: 0.1,
        });
        store.finish_batch(&finished).unwrap();
    };
    let (kept_id, lost_id, expected) = {
        let store = Store::open(dir.path()).unwrap();
        let kept_id = store.next_batch_id().unwrap();
        store.put_small_batch(&record(kept_id), &taken_in).unwrap();
        let lost_id = store.next_batch_id().unwrap();
        store.put_small_batch(&record(lost_id), &taken_in).unwrap();
        for i in 0..4 {
            store.put_item_later(kept_id, i as u32, ended(i)).unwrap();
        }
        store.put_item_later(lost_id, 0, ended(0)).unwrap();
        // Kept, not written: read over the record's items, by every reader.
        store.flush().unwrap();
        assert_eq!((store.item_parts.len(), store.items.len()), (0, 0));
        let mut expected: Vec<StoredItem> = (0..4).map(ended).collect();
        assert_eq!(store.items(kept_id).unwrap(), expected);
        assert_eq!(store.item(lost_id, 0).unwrap(), Some(ended(0)));
        // An item written now ends the keeping: the rest are held and written as any others.
        store.put_item(kept_id, 1, &ended(9)).unwrap();
        expected[1] = ended(9);
        assert_eq!(store.items(kept_id).unwrap(), expected);
        finish(&store, kept_id);
        assert_eq!(store.items(kept_id).unwrap(), expected);
        store.flush().unwrap();
        (kept_id, lost_id, expected)
    };
    let store = reopen(dir.path());
    assert_eq!(store.items(kept_id).unwrap(), expected);
    assert!(store.batch(kept_id).unwrap().unwrap().finished.is_some());
    // A crash forgets the kept items of a batch that had not ended: it reads as taken in.
    assert_eq!(store.items(lost_id).unwrap(), taken_in);
    assert_eq!(store.item_parts.len(), 0);
    // Ending it now (its items kept by no one since the restart) records them as they are.
    store.put_item_later(lost_id, 2, ended(2)).unwrap();
    finish(&store, lost_id);
    let mut now = taken_in.clone();
    now[2] = ended(2);
    assert_eq!(store.items(lost_id).unwrap(), now);
}

#[test]
fn a_batch_that_is_ending_is_always_found_by_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let small: Vec<StoredItem> = (0..4).map(|i| item(&format!("line {i}"))).collect();
    let ids: Vec<u64> = (0..300)
        .map(|_| create_batch(&store, "blank-last", &small, 1))
        .collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut missing = Vec::new();
            while !done.load(Ordering::SeqCst) {
                for &id in &ids {
                    if store.batch(id).unwrap().is_none() {
                        missing.push(id);
                    }
                }
                let listed = store.batches().unwrap().len();
                if listed != ids.len() {
                    missing.push(listed as u64);
                }
            }
            missing
        });
        for &id in &ids {
            let record = store.batch(id).unwrap().unwrap();
            store
                .finish_batch(&StoredBatch {
                    finished: Some(BatchFigures {
                        solved: 4,
                        failed: 0,
                        cancelled: 0,
                        nodes: 1,
                        seconds: 0.1,
                    }),
                    ..record
                })
                .unwrap();
        }
        done.store(true, Ordering::SeqCst);
        assert_eq!(reader.join().unwrap(), Vec::<u64>::new());
    });
    assert!(store
        .batches()
        .unwrap()
        .iter()
        .all(|b| b.finished.is_some()));
}

#[test]
fn incarnations_grow_across_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let first = Store::open(dir.path()).unwrap().next_incarnation().unwrap();
    let second = reopen(dir.path()).next_incarnation().unwrap();
    assert_eq!((first, second), (1, 2));
}

#[test]
fn a_store_of_format_4_has_its_batch_records_moved_out_of_sled_finished_over_taken_in() {
    let dir = tempfile::tempdir().unwrap();
    let taken_in = |id| StoredBatch::new(id, 2, "default", "blank-last", 5);
    let ended = StoredBatch {
        finished: Some(BatchFigures {
            solved: 2,
            failed: 0,
            cancelled: 0,
            nodes: 9,
            seconds: 0.25,
        }),
        ..taken_in(3)
    };
    {
        let store = Store::open(dir.path()).unwrap();
        // As format 4 wrote them: every batch in `batches`, those that ended in `finished`.
        for id in [3, 4] {
            let key = format::batch_key(id);
            store
                .batches
                .insert(key, format::encode(&taken_in(id)))
                .unwrap();
        }
        store
            .finished
            .insert(format::batch_key(3), format::encode(&ended))
            .unwrap();
        store
            .meta
            .insert(meta_key("format"), &4u64.to_be_bytes())
            .unwrap();
        store.db.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert_eq!(store.batches().unwrap(), [ended, taken_in(4)]);
    assert_eq!((store.batches.len(), store.finished.len()), (0, 0));
    assert_eq!(store.next_batch_id().unwrap(), 5);
    assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
}

#[test]
fn a_batch_keeps_its_limits_priority_and_bounded_items_in_either_record_form() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let limits = ItemLimits {
        seconds: Some(3.0),
        nodes: Some(400_000),
        suboptimal_percent: None,
    };
    let bounded = ItemStatus::Bounded(StoredBounded {
        length: 53,
        moves: "R".repeat(53),
        tiles: vec![1; 53],
        lower_bound: 49,
        weight_percent: 120,
        nodes: 400_000,
        seconds: 0.01,
        heuristic: "linear-conflict".into(),
        reason: "node limit 400000".into(),
        workers: vec![3],
    });
    let item = |status: ItemStatus| StoredItem {
        text: "2,3,1,9,5,4,7,11,10,0,14,15,12,8,6,13".into(),
        line: Some(1),
        board: Some("2,3,1,9,5,4,7,11,10,0,14,15,12,8,6,13".into()),
        goal: None,
        status,
        claimed: None,
    };
    // A small batch: one compact record with its items (its terms between the two); a batch
    // with the default terms is written as before.
    let urgent = Priority::HIGHEST;
    for (id, limits, priority) in [
        (1, limits, Priority::DEFAULT),
        (2, ItemLimits::default(), Priority::DEFAULT),
        (4, ItemLimits::default(), urgent),
        (5, limits, Priority::LOWEST),
    ] {
        let batch = StoredBatch {
            limits,
            priority,
            ..StoredBatch::new(id, 2, "linear-conflict", "blank-last", 1)
        };
        let items = [item(bounded.clone()), item(ItemStatus::Queued)];
        store.put_small_batch(&batch, &items).unwrap();
        assert_eq!(store.batch(id).unwrap(), Some(batch.clone()));
        assert_eq!(store.items(id).unwrap(), items);
    }
    // A large batch: a JSON record, its items in parts.
    let batch = StoredBatch {
        limits,
        priority: urgent,
        ..StoredBatch::new(3, 1, "linear-conflict", "blank-last", 1)
    };
    store.put_items(3, 0, &[item(bounded.clone())]).unwrap();
    store.put_batch(&batch).unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.batch(3).unwrap(), Some(batch));
    assert_eq!(store.items(3).unwrap(), [item(bounded)]);
    assert_eq!(
        store.batch(1).unwrap().map(|b| b.limits),
        Some(limits),
        "after reopening"
    );
    assert_eq!(store.batch(4).unwrap().map(|b| b.priority), Some(urgent));
}

/// A copy of the directory `from` at `to`, files and subdirectories.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// One bit flipped in sled's `db`, at each of 32 places spread over it: opening the store
/// never panics (it opens, or is refused naming the store), and the logs alone (salvage's way
/// in) give back every answer and every batch.
#[test]
fn a_flipped_bit_in_sleds_db_never_panics_and_the_logs_alone_keep_every_answer_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("store");
    let goal = Board::blank_last(3);
    let solver = Solver::new(goal, HeuristicKind::Manhattan);
    let mut boards = Vec::new();
    let mut board = goal;
    for step in 0..60usize {
        let direction = Direction::ALL[(step * 7 + step / 3) % 4];
        board = board.apply(direction).map_or(board, |(next, _)| next);
        if board != goal && !boards.contains(&board) {
            boards.push(board);
        }
    }
    let batches: Vec<u64> = {
        let store = Store::open(&original).unwrap();
        for board in &boards {
            let solution = solver.solve(board, &SolveOptions::default(), None).unwrap();
            store
                .put_solution(&solution, "manhattan", &[1], PathBoards::Skipped)
                .unwrap();
        }
        let items: Vec<StoredItem> = (0..50).map(|i| item(&format!("line {i}"))).collect();
        let batches = (0..4)
            .map(|_| create_batch(&store, "blank-last", &items, 1))
            .collect();
        store.flush().unwrap();
        batches
    };
    let everything_there = |store: &Store| {
        for board in &boards {
            assert!(store.solution(&goal, board).unwrap().is_some(), "{board}");
        }
        for &batch in &batches {
            assert!(store.batch(batch).unwrap().is_some(), "batch {batch}");
        }
    };
    let db = original.join("db");
    let length = std::fs::metadata(&db).unwrap().len();
    for place in 0..32u64 {
        let at = place * length / 32;
        let damaged = |name: &str| {
            let copy = dir.path().join(format!("{name}-{at}"));
            copy_dir(&original, &copy);
            let mut bytes = std::fs::read(copy.join("db")).unwrap();
            bytes[at as usize] ^= 1 << (place % 8);
            std::fs::write(copy.join("db"), bytes).unwrap();
            copy
        };
        let copy = damaged("opened");
        match std::panic::catch_unwind(|| Store::open(&copy)).expect("no panic") {
            Ok(store) => everything_there(&store),
            Err(error) => assert!(
                error.to_string().contains(&copy.display().to_string()),
                "byte {at}: {error}"
            ),
        }
        let copy = damaged("logs");
        everything_there(&Store::open_logs_alone(&copy).unwrap());
    }
}
