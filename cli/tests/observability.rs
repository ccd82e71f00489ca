//! Following one puzzle across processes: the coordinator logs each task it leases with its
//! batch, puzzle and task ids, and the worker logs every line about that task under the same
//! ids; both serve Prometheus metrics (the worker on `--metrics-listen`).

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
        "method=\"/tilesolve.v1.Workers/Poll\"",
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
