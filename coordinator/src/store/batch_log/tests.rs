use std::io::Write;

use super::{BatchLog, OnDamage, FIRST_SLOTS};

fn value(id: u64, version: u8) -> Vec<u8> {
    vec![version; 20 + (id % 50) as usize]
}

fn ids(page: Vec<(u64, Vec<u8>)>) -> Vec<u64> {
    page.into_iter().map(|(id, _)| id).collect()
}

/// Every live record, oldest first, read a page of 7 at a time.
fn all(batches: &BatchLog) -> Vec<(u64, Vec<u8>)> {
    let mut records = Vec::new();
    let mut after = None;
    loop {
        let page = batches.page(after, 7, false).unwrap();
        let Some(&(last, _)) = page.last() else {
            return records;
        };
        after = Some(last);
        records.extend(page);
    }
}

#[test]
fn puts_rewrites_and_removals_read_back_in_id_order_before_and_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    // Past the first index's slots, so the index grows on the way.
    let count = FIRST_SLOTS + 500;
    let expected = |id: u64| match id {
        id if id % 5 == 0 => None,
        id if id % 3 == 0 => Some(value(id, 2)),
        id => Some(value(id, 1)),
    };
    let check = |batches: &BatchLog| {
        for id in 1..count + 10 {
            let wanted = if id <= count { expected(id) } else { None };
            assert_eq!(batches.get(id).unwrap(), wanted, "batch {id}");
        }
        let live: Vec<_> = (1..=count)
            .filter_map(|id| expected(id).map(|v| (id, v)))
            .collect();
        assert_eq!(all(batches), live, "each batch once, at its newest record");
        assert_eq!(
            batches.last_id(),
            count,
            "removed or not, no id is handed out twice"
        );
        let newest: Vec<u64> = (1..=count)
            .rev()
            .filter(|&id| id % 5 != 0)
            .take(3)
            .collect();
        assert_eq!(ids(batches.page(None, 3, true).unwrap()), newest);
        assert_eq!(ids(batches.page(Some(16), 3, true).unwrap()), [14, 13, 12]);
        assert_eq!(ids(batches.page(Some(9), 3, false).unwrap()), [11, 12, 13]);
    };
    {
        let batches = BatchLog::open(dir.path()).unwrap();
        for id in 1..=count {
            batches.put(id, &value(id, 1)).unwrap();
        }
        for id in (3..=count).step_by(3) {
            batches.put(id, &value(id, 2)).unwrap();
        }
        for id in (5..=count).step_by(5) {
            assert!(batches.remove(id).unwrap());
        }
        assert!(!batches.remove(count + 1).unwrap(), "never stored");
        assert!(batches.put(0, b"x").is_err(), "id 0 is never a batch");
        check(&batches);
        batches.close().unwrap();
    }
    let batches = BatchLog::open(dir.path()).unwrap();
    check(&batches);
    drop(batches);
    // Without its index: rebuilt from the log alike.
    std::fs::remove_file(dir.path().join("batches.idx")).unwrap();
    check(&BatchLog::open(dir.path()).unwrap());
}

#[test]
fn a_crash_before_the_close_loses_nothing_synced_and_a_torn_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    {
        let batches = BatchLog::open(dir.path()).unwrap();
        for id in 1..=100 {
            batches.put(id, &value(id, 1)).unwrap();
        }
        batches.close().unwrap();
        // After the close: rewritten and removed (the index marked dirty), synced, never
        // closed.
        batches.put(1, &value(1, 9)).unwrap();
        assert!(batches.remove(2).unwrap());
        batches.put(101, &value(101, 1)).unwrap();
        batches.sync().unwrap();
        std::mem::forget(batches);
    }
    // Half a record at the log's end, as a write cut short by a crash leaves it.
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("batches.log"))
        .unwrap();
    log.write_all(&[60, 0, 0, 0, 1, 2, 3, 4, 1, 0]).unwrap();
    drop(log);
    let batches = BatchLog::open(dir.path()).unwrap();
    assert_eq!(batches.get(1).unwrap(), Some(value(1, 9)));
    assert_eq!(batches.get(2).unwrap(), None);
    assert_eq!(batches.last_id(), 101);
    assert_eq!(all(&batches).len(), 100);
    // The cut log takes new records where the torn one was.
    batches.put(102, &value(102, 3)).unwrap();
    batches.close().unwrap();
    drop(batches);
    let batches = BatchLog::open(dir.path()).unwrap();
    assert_eq!(batches.get(102).unwrap(), Some(value(102, 3)));
    assert_eq!(all(&batches).len(), 101);
}

#[test]
fn a_log_mostly_dead_is_rewritten_with_its_live_records_only() {
    let dir = tempfile::tempdir().unwrap();
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().len();
    {
        let batches =
            BatchLog::open_compacting_after(dir.path(), 10_000, OnDamage::Refuse).unwrap();
        // As a coordinator with a retention does: batches taken in, ended, and the oldest
        // removed.
        for id in 1..=2_000u64 {
            batches.put(id, &value(id, 1)).unwrap();
            batches.put(id, &value(id, 2)).unwrap();
            if id > 100 {
                assert!(batches.remove(id - 100).unwrap());
            }
        }
        assert!(
            size("batches.log") < 100 * 80 * 4,
            "rewritten: {} bytes for 100 records of at most 80",
            size("batches.log")
        );
        assert_eq!(ids(all(&batches)), (1_901..=2_000).collect::<Vec<_>>());
        batches.put(2_001, &value(2_001, 1)).unwrap();
        batches.sync().unwrap();
        std::mem::forget(batches);
    }
    let batches = BatchLog::open(dir.path()).unwrap();
    assert_eq!(ids(all(&batches)), (1_901..=2_001).collect::<Vec<_>>());
    assert_eq!(batches.get(1_950).unwrap(), Some(value(1_950, 2)));
    assert_eq!(batches.last_id(), 2_001);
}

#[test]
fn damage_costs_only_its_records_and_a_damaged_tail_too_long_to_be_torn_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let record = vec![7u8; 1_000];
    let count = 70_000u64;
    {
        let batches = BatchLog::open(dir.path()).unwrap();
        // More than `TORN_TAIL_MAX` after the damaged record.
        for id in 1..=count {
            batches.put(id, &record).unwrap();
        }
        batches.sync().unwrap();
        // A crash: the index is not closed clean, so the next opening reads the whole log.
        std::mem::forget(batches);
    }
    let log = dir.path().join("batches.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let length = bytes.len();
    // The log's 16-byte header, then records of (8-byte header, kind, key length, 8-byte key,
    // value).
    let damaged_id = (1_000_000 - 16) / (8 + 3 + 8 + 1_000) as u64 + 1;
    bytes[1_000_000] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    {
        let batches = BatchLog::open(dir.path()).unwrap();
        assert_eq!(batches.last_id(), count);
        let kept = ids(all(&batches));
        assert_eq!(kept.len() as u64, count - 1);
        assert!(!kept.contains(&damaged_id), "{damaged_id}");
        assert_eq!(batches.get(damaged_id).unwrap(), None);
        assert_eq!(batches.get(damaged_id + 1).unwrap(), Some(record.clone()));
        std::mem::forget(batches);
    }
    // Everything from there on zeroed, more than a torn write reaches, and the index lost
    // (a crash): refused, not cut.
    bytes[1_000_000..].fill(0);
    std::fs::write(&log, &bytes).unwrap();
    std::fs::remove_file(dir.path().join("batches.idx")).unwrap();
    let refused = BatchLog::open(dir.path()).err().expect("refused");
    assert!(
        refused.to_string().contains("batches.log is damaged"),
        "{refused}"
    );
    assert_eq!(
        std::fs::metadata(&log).unwrap().len() as usize,
        length,
        "nothing was cut"
    );
    let salvaged = BatchLog::open_salvaging(dir.path()).unwrap();
    assert_eq!(salvaged.last_id(), damaged_id - 1);
    assert_eq!(salvaged.get(damaged_id - 1).unwrap(), Some(record));
}
