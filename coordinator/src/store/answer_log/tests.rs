use std::io::Write;

use super::{AnswerLog, OnDamage, FIRST_SLOTS};

fn key(n: u32) -> Vec<u8> {
    let mut key = vec![1, 4];
    key.extend_from_slice(&n.to_be_bytes());
    key.extend_from_slice(&[7; 28]);
    key
}

fn value(n: u32, version: u8) -> Vec<u8> {
    vec![version; 20 + (n % 50) as usize]
}

fn all(answers: &AnswerLog) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries = Vec::new();
    let mut next = Some(0);
    while let Some(from) = next {
        let (chunk, after) = answers.entries_from(from, 100).unwrap();
        entries.extend(chunk);
        next = after;
    }
    entries.sort();
    entries
}

#[test]
fn puts_removals_and_rewrites_read_back_before_and_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    // Past the first index's 70%, so the index grows (twice) on the way.
    let count = (FIRST_SLOTS * 2) as u32;
    {
        let answers = AnswerLog::open(dir.path()).unwrap();
        for n in 0..count {
            answers.put(&key(n), &value(n, 1)).unwrap();
        }
        for n in (0..count).step_by(3) {
            answers.put(&key(n), &value(n, 2)).unwrap();
        }
        for n in (0..count).step_by(5) {
            assert!(answers.remove(&key(n)).unwrap());
        }
        assert!(!answers.remove(&key(count + 1)).unwrap(), "never stored");
        answers.close().unwrap();
    }
    let expected = |n: u32| match n {
        n if n % 5 == 0 => None,
        n if n % 3 == 0 => Some(value(n, 2)),
        n => Some(value(n, 1)),
    };
    let answers = AnswerLog::open(dir.path()).unwrap();
    for n in 0..count + 10 {
        let wanted = if n < count { expected(n) } else { None };
        assert_eq!(answers.get(&key(n)).unwrap(), wanted, "key {n}");
    }
    let live: Vec<_> = (0..count)
        .filter_map(|n| expected(n).map(|v| (key(n), v)))
        .collect();
    let mut live = live;
    live.sort();
    assert_eq!(all(&answers), live, "each key once, at its newest value");
}

#[test]
fn a_crash_before_the_flush_loses_nothing_flushed_and_a_torn_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    {
        let answers = AnswerLog::open(dir.path()).unwrap();
        for n in 0..100 {
            answers.put(&key(n), &value(n, 1)).unwrap();
        }
        answers.close().unwrap();
        // After the flush: rewritten and removed in the index (marked dirty), never flushed.
        answers.put(&key(0), &value(0, 9)).unwrap();
        assert!(answers.remove(&key(1)).unwrap());
        std::mem::forget(answers);
    }
    // Half a record at the log's end, as a write cut short by a crash leaves it.
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("answers.log"))
        .unwrap();
    log.write_all(&[60, 0, 0, 0, 1, 2, 3, 4, 1, 0]).unwrap();
    drop(log);
    let answers = AnswerLog::open(dir.path()).unwrap();
    assert_eq!(answers.get(&key(0)).unwrap(), Some(value(0, 1)));
    assert_eq!(answers.get(&key(1)).unwrap(), Some(value(1, 1)));
    assert_eq!(all(&answers).len(), 100);
    // The cut log takes new records where the torn one was.
    answers.put(&key(500), &value(500, 3)).unwrap();
    answers.close().unwrap();
    drop(answers);
    let answers = AnswerLog::open(dir.path()).unwrap();
    assert_eq!(answers.get(&key(500)).unwrap(), Some(value(500, 3)));
    assert_eq!(all(&answers).len(), 101);
}

#[test]
fn an_index_lost_or_of_another_log_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    {
        let answers = AnswerLog::open(dir.path()).unwrap();
        for n in 0..50 {
            answers.put(&key(n), &value(n, 1)).unwrap();
        }
        assert!(answers.remove(&key(7)).unwrap());
        answers.close().unwrap();
    }
    std::fs::remove_file(dir.path().join("answers.idx")).unwrap();
    let answers = AnswerLog::open(dir.path()).unwrap();
    assert_eq!(answers.get(&key(3)).unwrap(), Some(value(3, 1)));
    assert_eq!(
        answers.get(&key(7)).unwrap(),
        None,
        "the removal is in the log"
    );
    drop(answers);
    // Another store's index beside this log.
    let other = tempfile::tempdir().unwrap();
    AnswerLog::open(other.path()).unwrap().close().unwrap();
    std::fs::copy(
        other.path().join("answers.idx"),
        dir.path().join("answers.idx"),
    )
    .unwrap();
    let answers = AnswerLog::open(dir.path()).unwrap();
    assert_eq!(all(&answers).len(), 49);
}

#[test]
fn a_log_mostly_dead_is_rewritten_with_its_live_records_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let size = || {
        std::fs::metadata(dir.path().join("answers.log"))
            .unwrap()
            .len()
    };
    {
        let answers = AnswerLog::open(dir.path()).unwrap();
        for n in 0..2_000 {
            answers.put(&key(n), &value(n, 1)).unwrap();
        }
        // Pruned with their batches, or withdrawn: all but a tenth.
        for n in 200..2_000 {
            assert!(answers.remove(&key(n)).unwrap());
        }
        answers.put(&key(7), &value(7, 2)).unwrap();
        answers.close().unwrap();
    }
    let before = size();
    let answers = AnswerLog::open_compacting_after(dir.path(), 10_000, OnDamage::Refuse).unwrap();
    assert!(
        size() * 5 < before,
        "rewritten: {} bytes, {before} before",
        size()
    );
    let expected = |n: u32| match n {
        7 => Some(value(7, 2)),
        n if n < 200 => Some(value(n, 1)),
        _ => None,
    };
    let check = |answers: &AnswerLog| {
        for n in 0..2_010 {
            assert_eq!(answers.get(&key(n)).unwrap(), expected(n), "key {n}");
        }
        assert_eq!(all(answers).len(), 200);
    };
    check(&answers);
    // The rewritten log takes new records, and opens again (its index clean, or rebuilt).
    answers.put(&key(5_000), &value(5_000, 1)).unwrap();
    answers.close().unwrap();
    drop(answers);
    let answers = AnswerLog::open_compacting_after(dir.path(), 10_000, OnDamage::Refuse).unwrap();
    assert_eq!(answers.get(&key(5_000)).unwrap(), Some(value(5_000, 1)));
    drop(answers);
    std::fs::remove_file(dir.path().join("answers.idx")).unwrap();
    let answers = AnswerLog::open(dir.path()).unwrap();
    assert_eq!(answers.get(&key(5_000)).unwrap(), Some(value(5_000, 1)));
    assert_eq!(all(&answers).len(), 201);
}

/// Every entry `entries_from` gives, in at most `most` calls (a reader that stopped moving
/// on would loop for ever).
fn all_within(answers: &AnswerLog, most: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries = Vec::new();
    let mut next = Some(0);
    for _ in 0..most {
        let Some(from) = next else {
            entries.sort();
            return entries;
        };
        let (chunk, after) = answers.entries_from(from, 7).unwrap();
        entries.extend(chunk);
        next = after;
    }
    panic!("entries_from did not reach the log's end in {most} calls");
}

#[test]
fn a_flipped_bit_anywhere_in_the_log_costs_at_most_the_record_it_hits() {
    let dir = tempfile::tempdir().unwrap();
    let count = 30u32;
    {
        let answers = AnswerLog::open(dir.path()).unwrap();
        for n in 0..count {
            answers.put(&key(n), &value(n, 1)).unwrap();
        }
        answers.close().unwrap();
    }
    let log = std::fs::read(dir.path().join("answers.log")).unwrap();
    let index = std::fs::read(dir.path().join("answers.idx")).unwrap();
    // Where each record lies: the log's 16-byte header, then (8-byte record header, kind, key
    // length, key, value) for each key in order.
    let mut spans = Vec::new();
    let mut at = 16;
    for n in 0..count {
        let length = 8 + 3 + key(n).len() + value(n, 1).len();
        spans.push((at..at + length, n));
        at += length;
    }
    assert_eq!(at, log.len());
    // Every third byte past the header, each time another bit of it; read with the index
    // closed clean (the damage met by readers) and without it (met by the rebuild).
    for position in (16..log.len()).step_by(3) {
        let hit = spans
            .iter()
            .find(|(span, _)| span.contains(&position))
            .map(|&(_, n)| n)
            .unwrap();
        for with_index in [true, false] {
            let copy = tempfile::tempdir().unwrap();
            let mut damaged = log.clone();
            damaged[position] ^= 1 << (position % 8);
            std::fs::write(copy.path().join("answers.log"), &damaged).unwrap();
            if with_index {
                std::fs::write(copy.path().join("answers.idx"), &index).unwrap();
            }
            let answers = AnswerLog::open(copy.path())
                .unwrap_or_else(|e| panic!("byte {position}, index {with_index}: {e}"));
            let mut wanted: Vec<_> = (0..count)
                .filter(|&n| n != hit)
                .map(|n| (key(n), value(n, 1)))
                .collect();
            wanted.sort();
            assert_eq!(
                all_within(&answers, 100),
                wanted,
                "byte {position} (record {hit}), index {with_index}"
            );
            for n in 0..count {
                let got = answers.get(&key(n)).unwrap();
                let expected = (n != hit).then(|| value(n, 1));
                assert_eq!(
                    got, expected,
                    "key {n}, byte {position}, index {with_index}"
                );
            }
        }
    }
}
