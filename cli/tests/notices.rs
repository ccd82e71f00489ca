//! Completion notices against a real HTTP receiver on 127.0.0.1: down for the first attempts
//! and through a coordinator crash, then up; every terminal state (done, cancelled) noticed
//! once the receiver takes it, signed with the owner's secret.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::{far_boards, run_with_env, wait_until, walked, worker, write_batch, Coordinator};
use tilesolve_coordinator::notices::signature;

const WORKER_TOKEN: &str = "workers";

/// A request the receiver took: its headers (lower-cased names) and body.
struct Received {
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Answers 200 to every POST on `listener`, sending each request down the channel.
fn receive(listener: TcpListener, sender: mpsc::Sender<Received>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut headers = Vec::new();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let Some((name, value)) = line.trim_end().split_once(": ") else {
                break;
            };
            headers.push((name.to_ascii_lowercase(), value.to_string()));
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        let body = String::from_utf8(body).unwrap();
        if sender.send(Received { headers, body }).is_err() {
            return;
        }
    }
}

#[test]
fn notices_reach_a_receiver_that_was_down_through_a_coordinator_crash() {
    let dir = tempfile::tempdir().unwrap();
    let hash = tilesolve_coordinator::owners::token_sha256_hex("alice-token");
    let owners = dir.path().join("owners.toml");
    std::fs::write(
        &owners,
        format!("[[owner]]\nname = \"alice\"\nrole = \"submit\"\ntoken_sha256 = \"{hash}\"\nnotify_secret = \"alice-secret\"\n"),
    )
    .unwrap();
    let data = dir.path().join("coordinator");
    let serve = ["--owners", owners.to_str().unwrap()];
    let env = [("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN)];
    let server = Coordinator::start(&data, "127.0.0.1:0", &serve, &env);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("worker"), &["--token", WORKER_TOKEN]);
    // Nothing listens here yet: every attempt is refused.
    let port = common::port_outside_the_ephemeral_range();
    let hook = format!("http://127.0.0.1:{port}/hook");
    let as_alice = |url: &str, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend([
            "--coordinator",
            url,
            "--notify",
            &hook,
            "--heuristic",
            "linear-conflict",
        ]);
        run_with_env(&all, &[("TILESOLVE_TOKEN", "alice-token")])
    };
    let near = dir.path().join("near.txt");
    write_batch(&near, &walked(4, 30, 3, 31), false);
    let (ok, stdout, stderr) = as_alice(&url, &["submit", near.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let done_batch: u64 = stdout.trim().parse().unwrap();
    wait_until("the near batch done", Duration::from_secs(60), || {
        let (_, stdout, _) = run_with_env(
            &[
                "status",
                "--json",
                "--coordinator",
                &url,
                &done_batch.to_string(),
            ],
            &[("TILESOLVE_TOKEN", "alice-token")],
        );
        let status: serde_json::Value = serde_json::from_str(stdout.trim()).ok()?;
        (status["done"] == true).then_some(())
    });
    let far = dir.path().join("far.txt");
    write_batch(&far, &far_boards(5, 3), false);
    let (ok, stdout, stderr) = as_alice(&url, &["submit", far.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let cancelled_batch: u64 = stdout.trim().parse().unwrap();
    let (ok, _, stderr) = run_with_env(
        &[
            "cancel",
            "--coordinator",
            &url,
            &cancelled_batch.to_string(),
        ],
        &[("TILESOLVE_TOKEN", "alice-token")],
    );
    assert!(ok, "{stderr}");
    wait_until("two refused attempts each", Duration::from_secs(30), || {
        let log = server.log_text();
        (log.matches("notice not delivered").count() >= 4).then_some(())
    });

    // The coordinator crashes; the receiver comes up; the restarted coordinator delivers.
    server.process.kill();
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || receive(listener, sender));
    let server = Coordinator::start(&data, "127.0.0.1:0", &serve, &env);
    let mut notices: Vec<serde_json::Value> = Vec::new();
    for _ in 0..2 {
        let got = received
            .recv_timeout(Duration::from_secs(60))
            .expect("a notice within a minute of the restart");
        let signed = format!("sha256={}", signature("alice-secret", got.body.as_bytes()));
        assert_eq!(got.header("x-tilesolve-signature"), Some(signed.as_str()));
        assert_eq!(got.header("content-type"), Some("application/json"));
        notices.push(serde_json::from_str(&got.body).unwrap());
    }
    notices.sort_by_key(|n| n["batch"].as_u64());
    let (done, cancelled) = (&notices[0], &notices[1]);
    assert_eq!(done["event"], "batch.ended");
    assert_eq!(done["batch"], done_batch);
    assert_eq!(
        (&done["state"], &done["solved"], &done["total"]),
        (&"done".into(), &3.into(), &3.into()),
        "{done}"
    );
    assert_eq!(done["owner"], "alice");
    // Attempts before the crash were refused (a crash may forget the count of the last).
    assert!(done["attempt"].as_u64().unwrap() >= 2, "{done}");
    assert_eq!(cancelled["batch"], cancelled_batch);
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["failed"], 0, "{cancelled}");
    // Each delivered once: nothing more comes, and none waits.
    assert!(received.recv_timeout(Duration::from_secs(2)).is_err());
    let metrics = ureq::get(&format!("{}/metrics", server.url()))
        .set("Authorization", "Bearer alice-token")
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(
        metrics.contains("tilesolve_notices_delivered_total 2"),
        "{metrics}"
    );
    assert!(metrics.contains("tilesolve_notices_pending 0"), "{metrics}");

    // The dashboard's submit page names a receiver too (its notify field).
    let _worker = worker(
        &server.url(),
        &dir.path().join("again"),
        &["--token", WORKER_TOKEN],
    );
    let board = walked(4, 20, 1, 77).remove(0).0;
    let answer: serde_json::Value = ureq::post(&format!("{}/api/batches", server.url()))
        .set("Authorization", "Bearer alice-token")
        .send_json(serde_json::json!({
            "lines": [board],
            "heuristic": "linear-conflict",
            "notify_url": hook,
        }))
        .unwrap()
        .into_json()
        .unwrap();
    let got = received
        .recv_timeout(Duration::from_secs(60))
        .expect("the dashboard batch's notice");
    let notice: serde_json::Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(notice["batch"], answer["batch"], "{notice}");
    assert_eq!(notice["state"], "done", "{notice}");
}
