//! Following one puzzle across processes: the coordinator logs each task it leases with its
//! batch, puzzle and task ids, and the worker logs every line about that task under the same
//! ids; both serve Prometheus metrics (the worker on `--metrics-listen`). And what a
//! coordinator's memory is made of: a heap on small pages, pattern tables on 2 MiB ones.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{run, wait_until, Coordinator, Process, BIN};

/// `field=value` from a log line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    line[start..].split([' ', '}']).next()
}

fn get(url: &str) -> Option<String> {
    ureq::get(url).call().ok()?.into_string().ok()
}

#[test]
fn one_puzzle_is_followed_from_the_coordinator_log_into_the_worker_log() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &[],
        &[("RUST_LOG", "info,tilesolve_coordinator=debug")],
    );
    let url = server.url();
    let worker_log = dir.path().join("worker.log");
    let _worker = Process(
        Command::new(BIN)
            .args(["worker", "--threads", "1", "--coordinator", &url, "--data"])
            .arg(dir.path().join("worker"))
            .args(["--metrics-listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info,tilesolve_worker=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&worker_log).unwrap())
            .spawn()
            .expect("start worker"),
    );
    let worker_text = || std::fs::read_to_string(&worker_log).unwrap_or_default();
    let metrics_url = wait_until(
        "the worker's metrics address",
        Duration::from_secs(30),
        || {
            let text = worker_text();
            let line = text
                .lines()
                .find(|l| l.contains("worker metrics serving"))?;
            field(line, "address").map(|address| format!("http://{address}/metrics"))
        },
    );

    // examples15 #1: 40 moves.
    let board = "2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10";
    let file = dir.path().join("one.txt");
    std::fs::write(&file, format!("{board}\n")).unwrap();
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "pdb:5-5-5",
        "--wait",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(answer["length"], 40);

    let coordinator_log = server.log_text();
    let leased = coordinator_log
        .lines()
        .find(|l| l.contains("task leased"))
        .unwrap_or_else(|| panic!("no leased task in {coordinator_log}"));
    assert_eq!(field(leased, "batch"), Some("1"), "{leased}");
    assert_eq!(field(leased, "puzzle"), Some("1"), "{leased}");
    let task = field(leased, "task").expect("a task id");
    assert!(coordinator_log.lines().any(|l| l.contains("task reported")
        && field(l, "task") == Some(task)
        && field(l, "batch") == Some("1")));
    let ids = format!("task{{batch=1 puzzle=1 task={task}}}");
    let text = wait_until("the worker's task lines", Duration::from_secs(10), || {
        let text = worker_text();
        text.lines()
            .any(|l| l.contains(&ids) && l.contains("task finished"))
            .then_some(text)
    });
    assert!(
        text.lines()
            .any(|l| l.contains(&ids) && l.contains("task started")),
        "{text}"
    );
    // The share of its tables in 2 MiB pages, logged once they are loaded.
    assert!(
        text.lines()
            .any(|l| l.contains("MB of pattern tables, ") && l.contains("% of them in 2 MiB pages")),
        "{text}"
    );

    let worker_metrics = get(&metrics_url).expect("worker metrics");
    for name in [
        "tilesolve_worker_tasks_done_total 1",
        "tilesolve_worker_task_seconds_count 1",
        "tilesolve_worker_nodes_searched_total ",
        "tilesolve_worker_table_bytes ",
        "tilesolve_worker_table_bytes_in_huge_pages ",
        "tilesolve_build_info{version=",
        "\nprocess_cpu_seconds_total ",
        "\nprocess_resident_memory_bytes ",
        "\nprocess_open_fds ",
        "\n# EOF\n",
    ] {
        assert!(worker_metrics.contains(name), "{name}: {worker_metrics}");
    }
    let (found, _, _) = run(&["status", "--coordinator", &url, "999"]);
    assert!(!found, "no batch 999");
    let coordinator_metrics = get(&format!("{url}/metrics")).expect("coordinator metrics");
    for name in [
        "tilesolve_rpc_refused_total{method=\"/tilesolve.v1.Tilesolve/GetBatch\",code=\"NotFound\"} 1",
        "tilesolve_rpc_seconds_bucket{",
        "method=\"/tilesolve.v1.Workers/Session/Poll\"",
        "method=\"/tilesolve.v1.Tilesolve/SubmitBatch\",code=\"Ok\"",
        "tilesolve_build_info{version=",
        "\nprocess_cpu_seconds_total ",
        "\nprocess_start_time_seconds ",
        "\ntilesolve_store_disk_free_bytes ",
        "\ntilesolve_store_disk_size_bytes ",
        "\n# EOF\n",
    ] {
        assert!(
            coordinator_metrics.contains(name),
            "{name}: {coordinator_metrics}"
        );
    }
}

/// The `kB` figure of `field` in a block of `/proc/PID/smaps` lines.
fn kilobytes(block: &str, field: &str) -> u64 {
    block
        .lines()
        .find_map(|line| line.strip_prefix(field)?.trim().strip_suffix(" kB"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// `/proc/PID/smaps` split into one block per mapping: its `start-end perms ...` line, then its
/// `Field: value` lines.
fn mappings(smaps: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in smaps.lines() {
        let field = line
            .split_whitespace()
            .next()
            .is_some_and(|word| word.ends_with(':'));
        match blocks.last_mut() {
            Some(block) if field => {
                block.push('\n');
                block.push_str(line);
            }
            _ => blocks.push(line.to_string()),
        }
    }
    blocks
}

/// A coordinator keeps its heap on small pages (the kernel zeroing a 2 MiB page for each few
/// objects was a third of its CPU on easy boards) and maps its pattern tables on 2 MiB pages
/// (each puzzle's first bound is looked up in them at random): `process::small_pages_only`,
/// with mimalloc asking for no huge pages of its own. Checked where the system gives huge
/// pages to those who ask (`madvise`, the usual setting), and the tables' half only where the
/// file system caches them in 2 MiB folios (as `bench`, which keeps the system's setting,
/// finds).
#[cfg(target_os = "linux")]
#[test]
fn a_coordinator_keeps_its_heap_on_small_pages_and_its_tables_on_huge_ones() {
    let setting =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !setting.contains("[madvise]") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("coordinator");
    let data_arg = data.to_str().unwrap();
    let (ok, _, stderr) = run(&["pdb", "build", "6-6-3", "--data", data_arg]);
    assert!(ok, "{stderr}");
    // examples15 #1: 40 moves.
    let file = dir.path().join("one.txt");
    std::fs::write(&file, "2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10\n").unwrap();
    let file = file.to_str().unwrap();
    let (ok, stdout, stderr) = run(&[
        "bench",
        "--data",
        data_arg,
        "--heuristic",
        "pdb:6-6-3",
        "--json",
        file,
    ]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    let cached_in_folios = summary["table_bytes_in_huge_pages"].as_u64().unwrap_or(0) > 0;

    let server = Coordinator::start(&data, "127.0.0.1:0", &[], &[]);
    let url = server.url();
    // No worker: the puzzle waits, its first bound looked up in the tables it maps.
    let (ok, _, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "pdb:6-6-3",
        file,
    ]);
    assert!(ok, "{stderr}");
    let smaps = format!("/proc/{}/smaps", server.process.0.id());
    let tables = wait_until("the tables mapped", Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&smaps).ok()?;
        let tables: Vec<String> = mappings(&text)
            .into_iter()
            .filter(|block| block.lines().next().is_some_and(|l| l.ends_with(".pdb")))
            .collect();
        let touched = tables.iter().all(|block| kilobytes(block, "Rss:") > 0);
        (tables.len() >= 3 && touched).then_some(tables)
    });
    let rollup =
        std::fs::read_to_string(format!("/proc/{}/smaps_rollup", server.process.0.id())).unwrap();
    assert_eq!(kilobytes(&rollup, "AnonHugePages:"), 0, "{rollup}");
    if cached_in_folios {
        let huge: u64 = tables.iter().map(|b| kilobytes(b, "FilePmdMapped:")).sum();
        assert!(huge > 0, "{tables:?}");
    }
}
