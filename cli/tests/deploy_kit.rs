//! The operator's kit, checked with the real tools: deploy/monitoring's alert rules with
//! `promtool` (syntax and unit tests) and its Grafana dashboard's shape; a real Prometheus
//! loading those rules while it scrapes a coordinator and a worker, with every dashboard query
//! run against it; and every kustomize overlay of deploy/kubernetes rendered by `kubectl` and
//! checked against Pod Security "restricted" and the tokens and threads tilesolve needs.
//!
//! `.ci/run` installs Prometheus (Debian's `prometheus`, with promtool); without it these tests
//! fail under `CI` and say so elsewhere. kubectl and PyYAML are used where the machine has them
//! (no Debian package ships kubectl): without them the overlay check says so and passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::BIN;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn has(program: &str, probe: &[&str]) -> bool {
    Command::new(program)
        .args(probe)
        .output()
        .is_ok_and(|output| output.status.success())
}

fn has_prometheus() -> bool {
    let found = has("promtool", &["--version"]) && has("prometheus", &["--version"]);
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI must install Prometheus and promtool (.ci/run does)"
    );
    if !found {
        eprintln!("skipped: Prometheus is missing (apt-get install prometheus)");
    }
    found
}

/// Runs a repository script; returns whether it succeeded and what it printed (both streams).
fn script(path: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(root().join(path))
        .args(args)
        .env("TILESOLVE_BIN", BIN)
        .output()
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests_and_the_dashboard_is_well_formed() {
    if !has_prometheus() {
        return;
    }
    let (ok, text) = script("scripts/monitoring-check.sh", &[]);
    assert!(ok, "{text}");
    assert!(text.contains("SUCCESS: 8 rules found"), "{text}");
    assert!(
        text.contains("prometheus-rule.yml: the same rules"),
        "{text}"
    );
    assert!(text.contains(", well formed"), "{text}");
}

#[test]
fn a_real_prometheus_loads_the_rules_scrapes_both_processes_and_answers_every_dashboard_query() {
    if !has_prometheus() {
        return;
    }
    let (ok, text) = script("scripts/prometheus-scrape.sh", &["6"]);
    assert!(ok, "{text}");
    for job in ["job=tilesolve-coordinator} 1", "job=tilesolve-worker} 1"] {
        assert!(text.contains(job), "{job} not up:\n{text}");
    }
    for expected in [
        "process_cpu_seconds_total{instance=",
        "tilesolve_store_disk_free_bytes{instance=",
        "alert rules loaded:\n  TilesolveCoordinatorDown: ",
        " 0 refused",
        // Twenty puzzles cancelled, none failed: TilesolvePuzzlesFailing (more than 10
        // failed in 15 minutes) stays inactive, as the rules' check below says.
        "tilesolve_puzzles_failed_total{instance=127.0.0.1:",
        "tilesolve_puzzles_cancelled_total{instance=",
        "TilesolvePuzzlesFailing: inactive (ok)",
    ] {
        assert!(text.contains(expected), "{expected}:\n{text}");
    }
    let value = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|line| line.contains(&format!("{name}{{")))
            .unwrap_or_else(|| panic!("{name}:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("tilesolve_puzzles_failed_total"), 0.0, "{text}");
    assert!(value("tilesolve_puzzles_cancelled_total") > 10.0, "{text}");
    // Every rule evaluates. None fires on a healthy pair; one may be pending for a moment
    // (a scrape that timed out on a busy machine reads as the coordinator down).
    let rules: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("  Tilesolve"))
        .collect();
    assert_eq!(rules.len(), 8, "{text}");
    assert!(rules.iter().all(|rule| rule.ends_with(" (ok)")), "{text}");
    assert!(
        !text.contains("firing"),
        "an alert fired on a healthy pair:\n{text}"
    );
}

#[test]
fn every_overlay_renders_and_each_pod_is_restricted_with_the_worker_token_and_its_cpu_as_threads_and_its_egress_allowed(
) {
    let python_yaml = has("python3", &["-c", "import yaml"]);
    if !has("kubectl", &["version", "--client"]) || !python_yaml {
        eprintln!("skipped: needs kubectl and PyYAML (scripts/kube-check.sh)");
        return;
    }
    let (ok, text) = script("scripts/kube-check.sh", &[]);
    assert!(ok, "{text}");
    for overlay in [
        "base",
        "overlays/small",
        "overlays/restricted",
        "overlays/autoscaling",
        "overlays/egress",
        "overlays/ingress",
    ] {
        for pod in ["tilesolve-coordinator", "tilesolve-worker"] {
            assert!(
                text.contains(&format!(
                    "{overlay}: {pod}: restricted, seccomp RuntimeDefault"
                )),
                "{overlay} {pod}:\n{text}"
            );
        }
    }
    assert!(text.contains("overlays/small: tilesolve-worker: restricted, seccomp RuntimeDefault, no API token, threads = CPU request (2)"), "{text}");
    assert!(
        text.contains("namespace tilesolve enforces restricted"),
        "{text}"
    );
    // Traces and notices configured are let out (the script fails a pod whose NetworkPolicies
    // would block them), and the Ingress names a Service port that exists.
    for pod in ["tilesolve-coordinator", "tilesolve-worker"] {
        assert!(
            text.contains(&format!(
                "overlays/egress: {pod}: OTEL_EXPORTER_OTLP_ENDPOINT on port 4317 allowed out"
            )),
            "{text}"
        );
    }
    for ingress in ["tilesolve-dashboard", "tilesolve-grpc"] {
        assert!(
            text.contains(&format!("overlays/ingress: Ingress {ingress}: ")),
            "{text}"
        );
    }
}
