//! Who gets in and what they may send, as processes: token auth, TLS, limits, and malformed
//! RPCs from a hand-made gRPC client. Each test ends by checking that the coordinator still
//! solves an acknowledged batch with its published optimal lengths.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{
    assert_optimal, known_boards, lengths, run, run_with_env, worker, write_batch, Coordinator,
};
use tilesolve::proto::v1 as pb;
use tonic::Code;

/// Submits the ten examples15 boards through `args` and checks every length.
fn solves_optimally(dir: &Path, args: &[&str], env: &[(&str, &str)]) {
    let boards = known_boards(0);
    let path = dir.join("examples.txt");
    write_batch(&path, &boards, false);
    let mut all = vec!["submit", "--heuristic", "pdb:5-5-5", "--wait", "--json"];
    all.extend_from_slice(args);
    all.push(path.to_str().unwrap());
    let (ok, stdout, stderr) = run_with_env(&all, env);
    assert!(ok, "{stderr}");
    assert_optimal(&lengths(&stdout), &boards);
}

#[test]
fn calls_without_the_token_are_refused_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let secret = [("TILESOLVE_TOKEN", "s3cret-token")];
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &secret);
    let url = server.url();
    let path = dir.path().join("one.txt");
    std::fs::write(&path, "8,6,7,2,5,4,3,0,1\n").unwrap();
    let submit = ["submit", "--coordinator", &url, path.to_str().unwrap()];

    let (ok, _, stderr) = run(&submit);
    assert!(!ok);
    assert!(stderr.contains("Unauthenticated: no token"), "{stderr}");
    let (ok, _, stderr) = run_with_env(&submit, &[("TILESOLVE_TOKEN", "guess")]);
    assert!(!ok);
    assert!(stderr.contains("Unauthenticated: wrong token"), "{stderr}");
    let (ok, _, stderr) = run(&["batches", "--coordinator", &url, "--token", "s3cret-tokens"]);
    assert!(!ok && stderr.contains("wrong token"), "{stderr}");

    // A worker without the token is turned away at once rather than retrying forever.
    let output = std::process::Command::new(common::BIN)
        .args(["worker", "--threads", "1", "--coordinator", &url, "--data"])
        .arg(dir.path().join("intruder"))
        .env_remove("TILESOLVE_TOKEN")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refused this worker: Unauthenticated"),
        "{stderr}"
    );

    let log = server.log_text();
    assert!(log.contains("refused a call") && log.contains("reason=\"no token\""));
    assert!(log.contains("reason=\"wrong token\""), "{log}");
    assert!(!log.contains("s3cret-token"), "the token is never logged");

    let _worker = worker(&url, &dir.path().join("w1"), &["--token", "s3cret-token"]);
    solves_optimally(dir.path(), &["--coordinator", &url], &secret);
}

#[test]
fn tls_with_a_private_authority() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = common::certificates(dir.path());
    let secret = [("TILESOLVE_TOKEN", "tls-token")];
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--tls-cert", &cert, "--tls-key", &key],
        &secret,
    );
    // The certificate names localhost; the address is an IP, so the name is given.
    let url = format!("https://{}", server.address);
    let tls = ["--tls-ca", ca.as_str(), "--tls-domain", "localhost"];

    // A client that does not trust the authority, or reaches the server by a name its
    // certificate does not hold, is told which flag mends it, at once and once (exit 2).
    let ca_flag = ["--tls-ca", ca.as_str()];
    for (flags, fix) in [(&[][..], "--tls-ca"), (&ca_flag[..], "--tls-domain")] {
        let mut args = vec!["batches", "--coordinator", url.as_str()];
        args.extend_from_slice(flags);
        let output = std::process::Command::new(common::BIN)
            .args(&args)
            .env("TILESOLVE_TOKEN", "tls-token")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.matches(fix).count(), 1, "{stderr}");
        assert!(stderr.contains("certificate"), "{stderr}");
    }
    let plain = server.url();
    let output = std::process::Command::new(common::BIN)
        .args(["batches", "--coordinator", &plain])
        .env("TILESOLVE_TOKEN", "tls-token")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "http:// to a TLS port is a mistake in the address: {stderr}"
    );
    assert!(stderr.contains("speaks TLS: use https://"), "{stderr}");

    let mut worker_args = vec!["--token", "tls-token"];
    worker_args.extend_from_slice(&tls);
    let _worker = worker(&url, &dir.path().join("w1"), &worker_args);
    let mut args = vec!["--coordinator", url.as_str()];
    args.extend_from_slice(&tls);
    solves_optimally(dir.path(), &args, &secret);
}

#[test]
fn limits_refuse_with_resource_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--max-pending", "10"],
        &[],
    );
    let url = server.url();
    // Ten unfinished puzzles fit (no worker yet); more do not.
    let boards = known_boards(0);
    let path = dir.path().join("ten.txt");
    write_batch(&path, &boards, false);
    common::submit(&url, &path);
    let more = dir.path().join("more.txt");
    write_batch(&more, &known_boards(3)[9..], false);
    let (ok, _, stderr) = run(&["submit", "--coordinator", &url, more.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("ResourceExhausted") && stderr.contains("limit of 10"),
        "{stderr}"
    );

    // Files past the batch limits are refused before anything is sent.
    let huge = dir.path().join("huge.txt");
    std::fs::write(&huge, "1,2,3,4,5,6,7,0,8\n".repeat(100_001)).unwrap();
    let (ok, _, stderr) = run(&["submit", "--coordinator", &url, huge.to_str().unwrap()]);
    assert!(!ok && stderr.contains("at most 100000"), "{stderr}");

    // The acknowledged ten still finish optimally once a worker comes.
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    common::wait_until("the batch to finish", Duration::from_secs(300), || {
        (common::status(&url, "1", &[])?["done"] == true).then_some(())
    });
    let (ok, stdout, _) = run(&["results", "--coordinator", &url, "--json", "1"]);
    assert!(ok);
    assert_optimal(&lengths(&stdout), &boards);
}

/// The status code of a call's outcome (every refusal must say why).
fn code<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Code {
    match result {
        Ok(_) => Code::Ok,
        Err(status) => {
            assert!(!status.message().is_empty(), "{status:?}");
            status.code()
        }
    }
}

/// A message whose field 1 is a number where `SubmitBatchRequest` has strings: bytes that do
/// not decode as the request at all.
#[derive(Clone, PartialEq, prost::Message)]
struct NotASubmission {
    #[prost(uint64, tag = "1")]
    lines: u64,
}

#[test]
fn malformed_rpcs_are_refused_without_harm() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = pb::tilesolve_client::TilesolveClient::new(channel.clone());
        let mut workers = pb::workers_client::WorkersClient::new(channel.clone());

        let submit = |lines: Vec<&str>, heuristic: &str, goal: &str| pb::SubmitBatchRequest {
            lines: lines.into_iter().map(String::from).collect(),
            heuristic: heuristic.into(),
            goal: goal.into(),
            ..Default::default()
        };
        let limited = |time_limit_seconds: f64, suboptimal_percent: u32| pb::SubmitBatchRequest {
            time_limit_seconds,
            suboptimal_percent,
            ..submit(vec!["8,6,7,2,5,4,3,0,1"], "", "")
        };

        // Client API.
        let refusals = [
            (submit(vec![], "", ""), "no lines"),
            (submit(vec!["# only a comment", ""], "", ""), "no boards"),
            (submit(vec!["8,6,7,2,5,4,3,0,1"], "bogus", ""), "heuristic"),
            (
                submit(vec!["8,6,7,2,5,4,3,0,1"], "pdb:../../x", ""),
                "pdb name",
            ),
            (submit(vec!["8,6,7,2,5,4,3,0,1"], "", "1,2"), "goal"),
            (limited(f64::NAN, 0), "time limit NaN"),
            (limited(-1.0, 0), "negative time limit"),
            (limited(0.0, 100), "weight 1"),
            (limited(0.0, 5000), "weight 50"),
        ];
        for (request, what) in refusals {
            assert_eq!(
                code(client.submit_batch(request).await),
                Code::InvalidArgument,
                "{what}"
            );
        }
        for board in ["", "\0\0\0", "1,2,3", &"9".repeat(5000)] {
            let request = pb::QueryRequest {
                board: board.into(),
                goal: String::new(),
            };
            assert_eq!(
                code(client.query(request).await),
                Code::InvalidArgument,
                "{board:.20}"
            );
        }
        assert_eq!(
            code(
                client
                    .get_batch(pb::GetBatchRequest {
                        batch_id: 0,
                        ..Default::default()
                    })
                    .await
            ),
            Code::NotFound
        );
        for token in ["x", "-1", "99999999999"] {
            let request = pb::GetBatchRequest {
                batch_id: 0,
                page_size: 10,
                page_token: token.into(),
                ..Default::default()
            };
            assert_eq!(
                code(client.get_batch(request).await),
                Code::InvalidArgument,
                "{token}"
            );
        }
        assert_eq!(
            code(
                client
                    .watch_batch(pb::WatchBatchRequest { batch_id: u64::MAX })
                    .await
            ),
            Code::NotFound
        );
        assert_eq!(
            code(
                client
                    .cancel_batch(pb::CancelBatchRequest { batch_id: 7 })
                    .await
            ),
            Code::NotFound
        );

        // Worker API.
        let register = |threads: u32, protocol_version: u32, pdb: &str| pb::RegisterRequest {
            threads,
            protocol_version,
            host: "fuzz".into(),
            // Cut at 100 characters.
            name: "n".repeat(10_000),
            pdbs: if pdb.is_empty() {
                Vec::new()
            } else {
                vec![pb::PdbFile {
                    name: pdb.into(),
                    checksum: 1,
                }]
            },
            // Kept only in part: 8 names of 60 characters.
            default_heuristics: vec!["5x5 pdb:".repeat(1_000); 100],
        };
        for (request, expected, what) in [
            (
                register(1, 0, ""),
                Code::InvalidArgument,
                "no protocol version",
            ),
            (
                register(0, tilesolve::proto::PROTOCOL_VERSION, ""),
                Code::InvalidArgument,
                "no threads",
            ),
            (
                register(1 << 30, tilesolve::proto::PROTOCOL_VERSION, ""),
                Code::InvalidArgument,
                "a billion threads",
            ),
            (
                register(1, tilesolve::proto::PROTOCOL_VERSION, "../../etc/passwd"),
                Code::InvalidArgument,
                "a path for a pdb",
            ),
            (
                register(1, 99, ""),
                Code::FailedPrecondition,
                "another protocol",
            ),
        ] {
            assert_eq!(code(workers.register(request).await), expected, "{what}");
        }
        let poll = |worker_id: u64, secret: &str, results: Vec<pb::TaskResult>| pb::PollRequest {
            worker_id,
            worker_secret: secret.into(),
            free_slots: u32::MAX,
            results,
            idle: false,
            leaving: false,
        };
        assert_eq!(
            code(workers.poll(poll(12345, "", vec![])).await),
            Code::NotFound,
            "unknown worker"
        );
        assert_eq!(
            code(
                workers
                    .heartbeat(pb::HeartbeatRequest {
                        worker_id: 0,
                        worker_secret: String::new(),
                        running: vec![1, 2],
                        hold_ms: 0,
                    })
                    .await
            ),
            Code::NotFound
        );
        let registered = workers
            .register(register(1, tilesolve::proto::PROTOCOL_VERSION, ""))
            .await
            .unwrap()
            .into_inner();
        let (worker_id, secret) = (registered.worker_id, registered.worker_secret.as_str());
        // Another process that knows (or guesses: ids are sequential) the worker's id but not
        // its secret can neither poll, report nor heartbeat for it.
        for guess in ["", "00000000000000000000000000000000"] {
            assert_eq!(
                code(workers.poll(poll(worker_id, guess, vec![])).await),
                Code::PermissionDenied,
                "poll with secret '{guess}'"
            );
            let beat = pb::HeartbeatRequest {
                worker_id,
                worker_secret: guess.into(),
                running: vec![1],
                hold_ms: 0,
            };
            assert_eq!(
                code(workers.heartbeat(beat).await),
                Code::PermissionDenied,
                "heartbeat with secret '{guess}'"
            );
        }
        let result = |outcome| pb::TaskResult {
            task_id: 1,
            nodes: 5,
            seconds: 0.0,
            outcome,
            parts: Vec::new(),
            queued_seconds: f64::NAN,
        };
        use pb::task_result::Outcome;
        for (bad, what) in [
            (result(None), "no outcome"),
            (
                result(Some(Outcome::Found("UXD".into()))),
                "bad move letters",
            ),
            (
                result(Some(Outcome::Split(pb::SplitChildren {
                    moves: "Q".into(),
                    pruned_min_f: 9,
                }))),
                "bad child",
            ),
            (
                pb::TaskResult {
                    parts: vec![pb::PartSize {
                        moves: "UZ".into(),
                        nodes: 3,
                        micros: 1,
                    }],
                    ..result(Some(Outcome::NextBound(50)))
                },
                "bad part moves",
            ),
        ] {
            assert_eq!(
                code(workers.poll(poll(worker_id, secret, vec![bad])).await),
                Code::InvalidArgument,
                "{what}"
            );
        }
        // A well-formed report for a task this worker never held is ignored.
        let stray = result(Some(Outcome::Found("U".into())));
        assert_eq!(
            code(workers.poll(poll(worker_id, secret, vec![stray])).await),
            Code::Ok
        );
        for name in ["", "../store/db", ".hidden.pdb", "x.txt"] {
            let request = pb::FetchPdbRequest {
                file_name: name.into(),
                accept_zstd: false,
            };
            assert_eq!(
                code(workers.fetch_pdb(request).await),
                Code::InvalidArgument,
                "{name}"
            );
        }
        // Names that pass but are not tables: links out of the directory, a FIFO (opening it
        // would block), a file that is not a table. Each is refused at once, nothing streamed.
        let data = dir.path().join("coordinator");
        std::os::unix::fs::symlink("/etc/passwd", data.join("evil.pdb")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", data.join("zero.pdb")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(data.join("fifo.pdb"))
            .status()
            .unwrap();
        assert!(fifo.success());
        std::fs::write(data.join("junk.pdb"), b"not a table at all").unwrap();
        for name in [
            "evil.pdb",
            "zero.pdb",
            "fifo.pdb",
            "junk.pdb",
            "missing.pdb",
        ] {
            let request = pb::FetchPdbRequest {
                file_name: name.into(),
                accept_zstd: false,
            };
            let refused = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                workers.fetch_pdb(request),
            )
            .await
            .expect("refused at once");
            assert_eq!(code(refused), Code::NotFound, "{name}");
        }

        // Bytes that are not the request at all: gRPC's status for an undecodable message.
        let mut raw = tonic::client::Grpc::new(channel);
        raw.ready().await.unwrap();
        let undecodable = raw
            .unary(
                tonic::Request::new(NotASubmission { lines: 7 }),
                "/tilesolve.v1.Tilesolve/SubmitBatch".parse().unwrap(),
                tonic_prost::ProstCodec::<NotASubmission, pb::SubmitBatchResponse>::default(),
            )
            .await;
        assert_eq!(code(undecodable), Code::Internal);
        // A method nobody serves: gRPC's Unimplemented, as a gRPC client expects.
        raw.ready().await.unwrap();
        let unknown = raw
            .unary(
                tonic::Request::new(NotASubmission { lines: 1 }),
                "/tilesolve.v1.Nope/Call".parse().unwrap(),
                tonic_prost::ProstCodec::<NotASubmission, pb::SubmitBatchResponse>::default(),
            )
            .await;
        assert_eq!(code(unknown), Code::Unimplemented);
    });

    // A page nobody serves is a plain 404, not a gRPC answer.
    match ureq::get(&format!("{url}/nonexistent")).call() {
        Err(ureq::Error::Status(status, _)) => assert_eq!(status, 404),
        other => panic!("{other:?}"),
    }

    // Still up, still right.
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    solves_optimally(dir.path(), &["--coordinator", &url], &[]);
    assert!(
        server.process.0.try_wait().unwrap().is_none(),
        "the coordinator is still running"
    );
}

#[test]
fn serving_beyond_this_host_warns_about_what_is_exposed() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("open", Vec::new(), "without a token"),
        (
            "cleartext",
            vec![("TILESOLVE_TOKEN", "s3cret-token")],
            "the token crosses the network in the clear",
        ),
    ];
    for (name, env, warning) in cases {
        let server = Coordinator::start(&dir.path().join(name), "0.0.0.0:0", &[], &env);
        common::wait_until(warning, Duration::from_secs(10), || {
            server.log_text().contains(warning).then_some(())
        });
    }
}

#[test]
fn silent_connections_are_closed_after_the_idle_timeout() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--idle-timeout", "2"],
        &[],
    );
    let url = server.url();
    let address = url.trim_start_matches("http://");
    // 200 sockets that never send a byte.
    let mut silent: Vec<std::net::TcpStream> = (0..200)
        .map(|_| std::net::TcpStream::connect(address).unwrap())
        .collect();
    for socket in &mut silent {
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        // The server closes (end of stream or reset) rather than holding the socket.
        let closed = match socket.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(error) => {
                error.kind() != std::io::ErrorKind::WouldBlock
                    && error.kind() != std::io::ErrorKind::TimedOut
            }
        };
        assert!(closed, "a silent connection was held past the idle timeout");
    }
    // Live clients are pinged more often than the timeout: a batch slower than the timeout
    // is watched to its end on one connection.
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    solves_optimally(dir.path(), &["--coordinator", &url], &[]);
}

#[test]
fn clients_and_workers_hold_different_tokens_and_neither_opens_the_other_api() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = [
        ("TILESOLVE_TOKEN", "client-secret"),
        ("TILESOLVE_WORKER_TOKEN", "worker-secret"),
    ];
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &tokens);
    let url = server.url();

    // A worker holding only the client token is turned away.
    let output = std::process::Command::new(common::BIN)
        .args(["worker", "--threads", "1", "--coordinator", &url, "--data"])
        .arg(dir.path().join("intruder"))
        .env("TILESOLVE_TOKEN", "client-secret")
        .env_remove("TILESOLVE_WORKER_TOKEN")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("worker token"), "{stderr}");

    // The worker token cannot submit, list or read batches.
    let path = dir.path().join("one.txt");
    std::fs::write(&path, "8,6,7,2,5,4,3,0,1\n").unwrap();
    let (ok, _, stderr) = run_with_env(
        &["submit", "--coordinator", &url, path.to_str().unwrap()],
        &[("TILESOLVE_TOKEN", "worker-secret")],
    );
    assert!(!ok && stderr.contains("PermissionDenied"), "{stderr}");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        fn with_token<T>(message: T, token: &str) -> tonic::Request<T> {
            let mut request = tonic::Request::new(message);
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
            request
        }
        let mut client = pb::tilesolve_client::TilesolveClient::new(channel.clone());
        let mut workers = pb::workers_client::WorkersClient::new(channel.clone());
        let register = pb::RegisterRequest {
            threads: 1,
            protocol_version: tilesolve::proto::PROTOCOL_VERSION,
            ..Default::default()
        };
        assert_eq!(
            code(
                workers
                    .register(with_token(register.clone(), "client-secret"))
                    .await
            ),
            Code::PermissionDenied,
            "the client token cannot register a worker"
        );
        let fetch = pb::FetchPdbRequest {
            file_name: "3x3-blank-last-1.2.3.4.pdb".into(),
            accept_zstd: true,
        };
        let fetched = workers.fetch_pdb(with_token(fetch, "client-secret")).await;
        assert_eq!(
            fetched.err().map(|s| s.code()),
            Some(Code::PermissionDenied)
        );
        assert_eq!(
            code(
                client
                    .list_batches(with_token(
                        pb::ListBatchesRequest::default(),
                        "worker-secret"
                    ))
                    .await
            ),
            Code::PermissionDenied,
            "the worker token cannot list batches"
        );
        assert_eq!(
            code(
                client
                    .get_batch(with_token(
                        pb::GetBatchRequest {
                            batch_id: 1,
                            ..Default::default()
                        },
                        "worker-secret"
                    ))
                    .await
            ),
            Code::PermissionDenied,
            "the worker token cannot read batches"
        );
        assert_eq!(
            code(
                workers
                    .register(with_token(register, "worker-secret"))
                    .await
            ),
            Code::Ok,
        );
    });
    let log = server.log_text();
    assert!(!log.contains("client-secret") && !log.contains("worker-secret"));

    let _worker = worker(
        &url,
        &dir.path().join("w1"),
        &["--worker-token", "worker-secret"],
    );
    solves_optimally(dir.path(), &["--coordinator", &url], &tokens[..1]);
}

#[test]
fn reflection_answers_in_v1_and_v1alpha() {
    use tonic_reflection::pb::{v1, v1alpha};
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let services = runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut newer = v1::server_reflection_client::ServerReflectionClient::new(channel.clone());
        let request = v1::ServerReflectionRequest {
            message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            )),
            ..Default::default()
        };
        let mut answers = newer
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner();
        let v1_names = match answers.message().await.unwrap().unwrap().message_response {
            Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) => {
                list.service.into_iter().map(|s| s.name).collect::<Vec<_>>()
            }
            other => panic!("{other:?}"),
        };
        // grpcurl 1.8 and Python's grpc_reflection ask the older v1alpha service.
        let mut older = v1alpha::server_reflection_client::ServerReflectionClient::new(channel);
        let request = v1alpha::ServerReflectionRequest {
            message_request: Some(
                v1alpha::server_reflection_request::MessageRequest::ListServices(String::new()),
            ),
            ..Default::default()
        };
        let mut answers = older
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner();
        let v1alpha_names = match answers.message().await.unwrap().unwrap().message_response {
            Some(v1alpha::server_reflection_response::MessageResponse::ListServicesResponse(
                list,
            )) => list.service.into_iter().map(|s| s.name).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        (v1_names, v1alpha_names)
    });
    for names in [&services.0, &services.1] {
        assert!(
            names.iter().any(|n| n == "tilesolve.v1.Tilesolve"),
            "{names:?}"
        );
        assert!(
            names.iter().any(|n| n == "tilesolve.v1.Workers"),
            "{names:?}"
        );
    }
}

#[test]
fn a_tokenless_dashboard_refuses_cross_site_forms_and_foreign_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let path = dir.path().join("batch.txt");
    std::fs::write(&path, "1,2,3,4,5,6,0,7,8\n").unwrap();
    let (ok, id, stderr) = common::run(&["submit", "--coordinator", &url, path.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let cancel = format!("{url}/api/batches/{}/cancel", id.trim());
    // What a cross-site HTML form sends.
    match ureq::post(&cancel)
        .set("Content-Type", "application/x-www-form-urlencoded")
        .send_string("x=1")
    {
        Err(ureq::Error::Status(status, response)) => {
            assert_eq!(status, 415);
            assert!(response.into_string().unwrap().contains("application/json"));
        }
        other => panic!("a form POST was served: {other:?}"),
    }
    // DNS rebinding: the browser names the attacker's host.
    match ureq::get(&format!("{url}/api/overview"))
        .set("Host", "rebind.example")
        .call()
    {
        Err(ureq::Error::Status(status, response)) => {
            assert_eq!(status, 403);
            assert!(response.into_string().unwrap().contains("rebind.example"));
        }
        other => panic!("a foreign host was served: {other:?}"),
    }
    // The page's own requests are served.
    assert_eq!(
        ureq::get(&format!("{url}/api/overview"))
            .call()
            .unwrap()
            .status(),
        200
    );
    let cancelled = ureq::post(&cancel)
        .set("Content-Type", "application/json")
        .send_string("{}")
        .unwrap();
    assert_eq!(cancelled.status(), 200);
}
