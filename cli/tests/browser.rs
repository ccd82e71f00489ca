//! The dashboard end to end in a real browser: Debian's headless Chromium driven through
//! chromedriver (the W3C WebDriver protocol over HTTP), against a coordinator and a worker
//! started as processes, a test per view: the work view (batches paged, filtered and searched,
//! workers, history charts with axes, all still there after the coordinator restarts), the
//! puzzle view (a typed board solved and played to the goal, its shareable link), the batch
//! submitter and the batch page (bad lines named, items, downloads, cancel, look-ups), and owners
//! (each batch's owner, every owner's standing, what a reader may not do).
//!
//! `.ci/run` installs `chromium` and `chromium-driver`; where they are missing the test says so
//! and passes, unless `CI` is set. With `TILESOLVE_SCREENSHOT=FILE` it saves a PNG of the page
//! (and `TILESOLVE_OWNERS_SCREENSHOT=FILE` one of the batch list with owners and priorities).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine;
use common::{
    known_boards, run, submit, wait_until, walked, worker, write_batch, Coordinator, Process,
};
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Whether Chromium and chromedriver are here; where they are not the test says so and passes,
/// unless `CI` is set (`.ci/run` installs them).
fn browser_installed() -> bool {
    let installed =
        std::path::Path::new(CHROMIUM).exists() && std::path::Path::new(CHROMEDRIVER).exists();
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install chromium and chromium-driver (.ci/run does)"
        );
        eprintln!("skipped: {CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)");
    }
    installed
}

/// One WebDriver session.
struct Browser {
    base: String,
    _driver: Process,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Browser {
        let port = common::port_outside_the_ephemeral_range();
        let driver = Process(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let url = format!("http://127.0.0.1:{port}");
        wait_until("chromedriver", Duration::from_secs(30), || {
            ureq::get(&format!("{url}/status")).call().ok()
        });
        let profile = tempfile::tempdir().unwrap();
        // The flags keep Chromium from reaching for the network at start (this machine's
        // network is closed) and let it run as root in a container.
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1000",
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let session: Value = ureq::post(&format!("{url}/session"))
            .send_json(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
            }}}))
            .expect("a WebDriver session")
            .into_json()
            .unwrap();
        let id = session["value"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        Browser {
            base: format!("{url}/session/{id}"),
            _driver: driver,
            _profile: profile,
        }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.try_post(path, body)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// A WebDriver call; an error carries what the driver said (its body names the cause).
    fn try_post(&self, path: &str, body: Value) -> Result<Value, String> {
        match ureq::post(&format!("{}{path}", self.base)).send_json(body) {
            Ok(response) => {
                let response: Value = response.into_json().map_err(|e| e.to_string())?;
                Ok(response["value"].clone())
            }
            Err(ureq::Error::Status(code, response)) => Err(format!(
                "status {code}: {}",
                response.into_string().unwrap_or_default()
            )),
            Err(error) => Err(error.to_string()),
        }
    }

    fn get(&self, path: &str) -> Value {
        let response: Value = ureq::get(&format!("{}{path}", self.base))
            .call()
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .into_json()
            .unwrap();
        response["value"].clone()
    }

    /// Opens `url`. A page load on a machine busy compiling can outlast the driver's wait
    /// (it answers 500), so a failed load is tried again, twice.
    fn open(&self, url: &str) {
        for attempt in 1..=3 {
            match self.try_post("/url", json!({ "url": url })) {
                Ok(_) => return,
                Err(error) if attempt < 3 => {
                    eprintln!("opening {url} (attempt {attempt}): {error}")
                }
                Err(error) => panic!("opening {url}: {error}"),
            }
        }
    }

    fn element(&self, css: &str) -> String {
        let found = self.post("/element", json!({"using": "css selector", "value": css}));
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("{css}: {found}"))
            .to_string()
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css);
        self.post(&format!("/element/{element}/clear"), json!({}));
        self.post(
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        );
    }

    fn click(&self, css: &str) {
        let element = self.element(css);
        self.post(&format!("/element/{element}/click"), json!({}));
    }

    fn text(&self, css: &str) -> String {
        let element = self.element(css);
        self.get(&format!("/element/{element}/text"))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the element's text satisfies `wanted`.
    fn wait_for_text(&self, css: &str, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        wait_until(what, Duration::from_secs(60), || {
            let text = self.text(css);
            wanted(&text).then_some(text)
        })
    }

    /// Runs `script` (a function body) in the page and gives what it returns.
    fn script(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] }))
    }

    fn screenshot(&self, path: &str) {
        let png = self.get("/screenshot");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64 PNG"))
            .expect("decodable");
        std::fs::write(path, bytes).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&self.base).call();
    }
}

#[test]
fn the_dashboard_solves_a_typed_board_and_animates_it_to_the_goal() {
    if !browser_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    // A batch in the background, so the batches table has something to show.
    let batch = dir.path().join("examples.txt");
    write_batch(&batch, &known_boards(3), false);
    submit(&url, &batch);

    let browser = Browser::start();
    browser.open(&url);
    browser.wait_for_text("#totals", "live totals", |t| t.contains("2 workers"));
    // The page opens on the work; the puzzle view is a tab.
    browser.click("#tab-puzzle");
    // It opens on a 4x4 board (30 random moves from the goal); Shuffle makes one of that size.
    let property = |css: &str, name: &str| {
        let element = browser.element(css);
        browser.get(&format!("/element/{element}/property/{name}"))
    };
    assert_eq!(property("#size", "value"), "4x4");
    browser.click("#shuffle");
    let shuffled = property("#board-input", "value");
    assert_eq!(
        shuffled.as_str().unwrap().split(',').count(),
        16,
        "{shuffled}"
    );
    // 31 moves: one of the two hardest 8-puzzles.
    browser.type_into("#board-input", "8,6,7,2,5,4,3,0,1");
    browser.click("#solve");
    let solved = common::within(Duration::from_secs(60), || {
        (browser.text("#length") == "31").then_some(())
    });
    // What the page says when the length never comes is what tells why.
    let status = browser.text("#solve-status");
    assert!(
        solved.is_some(),
        "no 31-move answer within 60 s: the page says {status:?}"
    );
    assert!(status.starts_with("solved"), "{status}");
    browser.click("#play");
    browser.wait_for_text("#board-status", "the animation to reach the goal", |t| {
        t == "goal reached"
    });
    assert_eq!(browser.text("#position"), "move 31 of 31");
    browser.click("#tab-work");
    let batches = browser.wait_for_text("#batches", "the batches table", |t| t.contains("13 / 13"));
    // The puzzle view's one-board batch is not listed among the work.
    assert!(!batches.contains("1 / 1"), "{batches}");
    if let Ok(path) = std::env::var("TILESOLVE_SCREENSHOT") {
        browser.screenshot(&path);
    }

    // The solution's link, opened fresh, shows the stored answer.
    let share = browser.element("#share");
    let link = browser.get(&format!("/element/{share}/property/href"));
    let link = link.as_str().expect("a link").to_string();
    assert!(
        link.ends_with("#board=8%2C6%2C7%2C2%2C5%2C4%2C3%2C0%2C1"),
        "{link}"
    );
    browser.open("about:blank");
    browser.open(&link);
    browser.wait_for_text("#length", "the stored solution", |t| t == "31");
    assert!(browser.text("#solve-status").starts_with("stored solution"));
}

#[test]
fn a_link_with_the_token_opens_the_dashboard_and_leaves_the_address_bar() {
    if !browser_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token = "dashboard-link-token";
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &[],
        &[("TILESOLVE_TOKEN", token)],
    );
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &["--token", token]);

    let browser = Browser::start();
    browser.open(&format!(
        "{url}/?token={token}#board=1%2C2%2C3%2C4%2C5%2C6%2C7%2C0%2C8"
    ));
    // The live totals need the token: they arrive only if the link's token was taken.
    browser.wait_for_text("#totals", "live totals", |t| t.contains("1 worker"));
    let address = browser.get("/url");
    let address = address.as_str().expect("the address");
    assert!(
        !address.contains(token),
        "the token stays in the address bar: {address}"
    );
    assert!(
        address.ends_with("/#board=1%2C2%2C3%2C4%2C5%2C6%2C7%2C0%2C8"),
        "{address}"
    );
    // Opened again without it, the page still has the token (kept like a typed one).
    browser.open(&url);
    browser.wait_for_text("#totals", "live totals again", |t| t.contains("worker"));
    let token_box = browser.element("#token-box");
    assert_eq!(
        browser.get(&format!("/element/{token_box}/property/hidden")),
        json!(true),
        "the page does not ask for the token"
    );
}

/// Chromium's own dump of the page after its scripts ran (`--dump-dom`), as the check:
/// a virtual time budget lets the page's requests finish before the dump.
fn dumped_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new("timeout")
        .args([
            "60",
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .expect("run chromium --dump-dom");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_dashboard_submits_opens_cancels_and_looks_up() {
    if !browser_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &["--name", "test-worker"]);
    let boards = known_boards(0);
    let browser = Browser::start();
    browser.open(&url);
    browser.wait_for_text("#workers", "the worker by its name", |t| {
        t.contains("test-worker")
    });

    // Three boards of examples15 and a bad line, pasted: the bad line is named before sending.
    let pasted: Vec<&str> = vec![&boards[0].0, &boards[1].0, "1,2,3,x", &boards[2].0];
    browser.click("#tab-submit");
    browser.type_into("#batch-input", &pasted.join("\n"));
    browser.click("#batch-heuristic option[value='pdb:5-5-5']");
    browser.wait_for_text("#batch-check", "the check of the pasted lines", |t| {
        t.contains("3 boards") || t.contains("4 boards")
    });
    let errors = browser.wait_for_text("#batch-errors", "the bad line", |t| !t.is_empty());
    assert!(errors.starts_with("line 3: "), "{errors}");
    browser.click("#batch-submit");
    let state = browser.wait_for_text("#batch-state", "the batch page, done", |t| {
        t.contains("done")
    });
    assert!(state.starts_with("3 of 4 solved, 1 failed"), "{state}");
    let address = browser.get("/url");
    let batch: u64 = address
        .as_str()
        .and_then(|a| a.rsplit("#batch=").next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("the batch opens: {address}"));
    let items = browser.text("#batch-items");
    for (board, optimal) in &boards[..3] {
        let row = items
            .lines()
            .find(|line| line.contains(board.as_str()))
            .unwrap_or_else(|| panic!("{board} on the batch page: {items}"));
        assert!(
            row.contains(&format!("solved {optimal} ")),
            "{board} should be {optimal} moves: {row}"
        );
    }
    assert!(items.contains("error: line 3"), "{items}");
    let csv = browser.element("#batch-csv");
    let href = browser.get(&format!("/element/{csv}/property/href"));
    let downloaded = ureq::get(href.as_str().unwrap())
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert_eq!(
        downloaded.lines().count(),
        5,
        "a header and four items: {downloaded}"
    );
    if let Ok(path) = std::env::var("TILESOLVE_BATCH_SCREENSHOT") {
        browser.screenshot(&path);
    }

    // Chromium's --dump-dom of the batch page holds every board with its length.
    let dom = dumped_dom(&format!("{url}/#batch={batch}"));
    for (board, optimal) in &boards[..3] {
        assert!(
            dom.contains(&format!(
                "{board}</button></td><td>solved</td><td>{optimal}</td>"
            )),
            "{board}: {dom}"
        );
    }

    // A stored board is looked up without a search; another is not stored.
    browser.open(&format!("{url}/#puzzle"));
    browser.type_into("#board-input", &boards[0].0);
    browser.click("#lookup");
    browser.wait_for_text("#length", "the stored length", |t| {
        t == boards[0].1.to_string()
    });
    assert!(browser.text("#solve-status").starts_with("stored solution"));
    browser.type_into("#board-input", &boards[5].0);
    browser.click("#lookup");
    browser.wait_for_text("#solve-status", "not stored", |t| {
        t.starts_with("not stored")
    });

    // A batch that would take hours (Manhattan on Korf #88, 65 moves) is cancelled from its page.
    let hard = dir.path().join("hard.txt");
    std::fs::write(&hard, "15,2,12,11,14,13,9,5,1,3,8,7,0,10,6,4\n").unwrap();
    let (ok, stdout, stderr) = common::run(&[
        "submit",
        "--coordinator",
        &url,
        "--goal",
        "korf",
        "--heuristic",
        "manhattan",
        hard.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let hard_batch = stdout.trim();
    browser.open(&format!("{url}/#batch={hard_batch}"));
    browser.wait_for_text("#batch-state", "the running batch", |t| {
        t.contains("running")
    });
    browser.click("#batch-cancel");
    browser.post("/alert/accept", json!({}));
    let state = browser.wait_for_text("#batch-state", "the cancelled batch", |t| {
        t.contains("done")
    });
    assert!(
        state.starts_with("0 of 1 solved, 0 failed, 1 cancelled"),
        "{state}"
    );
    assert!(browser.text("#batch-items").contains("cancelled"));
    // Filtered to its cancelled items, then retried: a new batch's page, linked to this one.
    browser.click("#batch-item-state option[value='cancelled']");
    browser.wait_for_text("#batch-items", "the cancelled items", |t| {
        t.contains("cancelled")
    });
    if let Ok(path) = std::env::var("TILESOLVE_RETRY_SCREENSHOT") {
        browser.screenshot(&path);
    }
    // Enabled as the page shows the batch; a click on a disabled button does nothing.
    wait_until("the retry button", Duration::from_secs(60), || {
        (browser.script("return document.getElementById('batch-retry').disabled") == json!(false))
            .then_some(())
    });
    retry_from_its_page(&browser, &server, hard_batch);
    let retry_title = browser.text("#batch-title");
    assert_ne!(retry_title, format!("Batch {hard_batch}"));
    browser.wait_for_text("#batch-state", "the retry running", |t| {
        t.contains("running") && t.starts_with("0 of 1 solved")
    });
}

/// Clicks "Retry failed and cancelled" on batch `retried`'s page and waits for the new batch's
/// page, linked to it. A click the coordinator never heard of (no "batch retried" in its log
/// after 10 s, and no error on the page) is made again: a click can land where the button was a
/// moment before, as the page above it re-renders. An error on the page (a retry the
/// coordinator refused, or a load that failed) fails here with what the page said, and a page
/// that never opens with what the coordinator logged.
fn retry_from_its_page(browser: &Browser, server: &Coordinator, retried: &str) {
    let retry_of = format!("a retry of batch {retried}");
    let heard = || server.log_text().matches("batch retried").count();
    let before = heard();
    for click in 1..=3 {
        browser.click("#batch-retry");
        let outcome = common::within(Duration::from_secs(10), || {
            if browser.text("#batch-retry-of") == retry_of {
                return Some(Ok(()));
            }
            let state = browser.script(
                "const s = document.getElementById('batch-state'); \
                 return s.classList.contains('error') ? s.textContent : null",
            );
            state.as_str().map(|said| Err(said.to_string()))
        });
        match outcome {
            Some(Ok(())) => return,
            Some(Err(said)) => panic!("after the retry's click the page shows an error: {said}"),
            None if heard() > before => break,
            None => eprintln!("click {click} on the retry button: the coordinator heard nothing"),
        }
    }
    let opened = common::within(Duration::from_secs(50), || {
        (browser.text("#batch-retry-of") == retry_of).then_some(())
    });
    if opened.is_none() {
        let log = server.log_text();
        let said: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("retr") || line.contains("WARN") || line.contains("ERROR"))
            .collect();
        panic!(
            "the retry's page did not open; the page is at {} and says: {}; the coordinator \
             logged: {said:#?}",
            browser.get("/url"),
            browser.text("#batch-state")
        );
    }
}

/// The chart's drawn lines and tick labels, and its accessible summary.
fn chart(browser: &Browser, id: &str) -> (u64, u64, String) {
    let found = browser.script(&format!(
        "const svg = document.getElementById('{id}');
         return [svg.querySelectorAll('polyline').length,
                 svg.querySelectorAll('text.tick').length,
                 svg.getAttribute('aria-label') || ''];"
    ));
    (
        found[0].as_u64().unwrap_or(0),
        found[1].as_u64().unwrap_or(0),
        found[2].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn the_work_view_pages_filters_and_charts_history_that_survives_a_restart() {
    if !browser_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("coordinator");
    let port = common::port_outside_the_ephemeral_range();
    let listen = format!("127.0.0.1:{port}");
    let serve = ["--history-seconds", "0.5"];
    let server = Coordinator::start(&data, &listen, &serve, &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    // 24 batches of one 15-puzzle each, then one that would take hours (Manhattan on Korf #88),
    // cancelled: 25 batches, two pages of the list.
    for (index, (board, _)) in walked(4, 30, 24, 11).iter().enumerate() {
        let file = dir.path().join(format!("b{index}.txt"));
        std::fs::write(&file, format!("{board}\n")).unwrap();
        submit(&url, &file);
    }
    let hard = dir.path().join("hard.txt");
    std::fs::write(&hard, "15,2,12,11,14,13,9,5,1,3,8,7,0,10,6,4\n").unwrap();
    let (ok, _, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--goal",
        "korf",
        "--heuristic",
        "manhattan",
        "--priority",
        "1",
        hard.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = run(&["cancel", "--coordinator", &url, "25"]);
    assert!(ok, "{stderr}");

    let browser = Browser::start();
    browser.open(&url);
    browser.wait_for_text("#batches-range", "the first page", |t| {
        t == "page 1 · 20 batches"
    });
    let first = browser.text("#batches");
    assert!(first.starts_with("25 "), "newest first: {first}");
    assert!(
        first.contains("cancelled") && first.contains("manhattan"),
        "{first}"
    );
    // Its priority column: the lowest for the long batch, the default for the others.
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let row = words(first.lines().next().unwrap());
    assert_eq!(
        row[row.iter().position(|w| w == "manhattan").unwrap() - 1],
        "1",
        "{first}"
    );
    let row = words(first.lines().nth(1).unwrap());
    assert_eq!(
        row[row.iter().position(|w| w == "pdb:5-5-5").unwrap() - 1],
        "3",
        "{first}"
    );
    browser.click("#batches-older");
    browser.wait_for_text("#batches-range", "the second page", |t| {
        t == "page 2 · 5 batches"
    });
    assert!(browser.text("#batches").starts_with("5 "));
    browser.click("#batches-newer");
    browser.wait_for_text("#batches-range", "the first page again", |t| {
        t == "page 1 · 20 batches"
    });
    browser.click("#batch-state-filter option[value='cancelled']");
    browser.wait_for_text("#batches-range", "the cancelled batch", |t| {
        t == "page 1 · 1 batches"
    });
    assert!(browser.text("#batches").starts_with("25 "));
    browser.click("#batch-state-filter option[value='']");
    browser.type_into("#batch-search", "5-5-5");
    let found = browser.wait_for_text("#batches", "the pdb:5-5-5 batches", |t| {
        !t.contains("manhattan") && t.lines().count() == 20
    });
    assert!(found.starts_with("24 "), "{found}");

    // The charts: lines with labelled axes (five times, at least two values), from the
    // coordinator's samples every half second.
    let (lines, ticks, label) = wait_until("drawn charts", Duration::from_secs(30), || {
        let drawn = chart(&browser, "chart-solved");
        (drawn.0 >= 1 && drawn.1 >= 7).then_some(drawn)
    });
    assert!(
        label.starts_with("puzzles / min: solved "),
        "{label} ({lines} lines, {ticks} ticks)"
    );
    let solved_before = browser.text("#totals");
    assert!(
        solved_before.contains("24 solved, 0 failed, 1 cancelled (all time)"),
        "{solved_before}"
    );

    // A restart: the batches, the totals and the charts come back from the store.
    server.process.kill();
    let server = Coordinator::start(&data, &listen, &serve, &[]);
    browser.open("about:blank");
    browser.open(&server.url());
    browser.wait_for_text("#batches-range", "the first page after the restart", |t| {
        t == "page 1 · 20 batches"
    });
    browser.wait_for_text("#totals", "the totals after the restart", |t| {
        t.contains("24 solved, 0 failed, 1 cancelled (all time)")
    });
    wait_until(
        "charts from the stored history",
        Duration::from_secs(30),
        || {
            let (lines, ticks, _) = chart(&browser, "chart-solved");
            (lines >= 1 && ticks >= 7).then_some(())
        },
    );
    let note = browser.text("#history-note");
    assert!(
        note.contains("sampled every 0.5 s by the coordinator"),
        "{note}"
    );
    if let Ok(path) = std::env::var("TILESOLVE_WORK_SCREENSHOT") {
        browser.screenshot(&path);
    }
}

/// One `[[owner]]` of an owners file.
fn owner_entry(name: &str, role: &str, token: &str, limits: &str) -> String {
    let hash = tilesolve_coordinator::owners::token_sha256_hex(token);
    format!(
        "[[owner]]\nname = \"{name}\"\nrole = \"{role}\"\ntoken_sha256 = \"{hash}\"\n{limits}\n"
    )
}

#[test]
fn the_batch_list_shows_owners_and_priorities_and_each_owner_sees_its_standing() {
    if !browser_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let owners = dir.path().join("owners.toml");
    let text = owner_entry(
        "alice",
        "submit",
        "alice-token",
        "max_running_batches = 3\nmax_pending_boards = 100",
    ) + &owner_entry("bob", "read", "bob-token", "")
        + &owner_entry(
            "carol",
            "admin",
            "carol-token",
            "max_nodes_per_day = 1000000000000",
        );
    std::fs::write(&owners, text).unwrap();
    let serve = ["--owners", owners.to_str().unwrap()];
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &serve,
        &[("TILESOLVE_WORKER_TOKEN", "workers")],
    );
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &["--token", "workers"]);
    let submit_as = |token: &str, priority: &str, goal: &str, heuristic: &str, board: &str| {
        let file = dir.path().join(format!("{token}-{priority}.txt"));
        std::fs::write(&file, format!("{board}\n")).unwrap();
        let (ok, stdout, stderr) = common::run_with_env(
            &[
                "submit",
                "--coordinator",
                &url,
                "--priority",
                priority,
                "--goal",
                goal,
                "--heuristic",
                heuristic,
                file.to_str().unwrap(),
            ],
            &[("TILESOLVE_TOKEN", token)],
        );
        assert!(ok, "{stderr}");
        stdout.trim().to_string()
    };
    let near = walked(4, 30, 3, 17);
    submit_as(
        "alice-token",
        "3",
        "blank-last",
        "linear-conflict",
        &near[0].0,
    );
    submit_as(
        "carol-token",
        "4",
        "blank-last",
        "linear-conflict",
        &near[1].0,
    );
    submit_as(
        "alice-token",
        "5",
        "blank-last",
        "linear-conflict",
        &near[2].0,
    );
    // Korf #88 under Manhattan takes hours: alice's long batch, running through the test.
    let long = submit_as(
        "alice-token",
        "1",
        "korf",
        "manhattan",
        "15,2,12,11,14,13,9,5,1,3,8,7,0,10,6,4",
    );

    let browser = Browser::start();
    browser.open(&format!("{url}/?token=carol-token"));
    browser.wait_for_text("#you", "the admin signed in", |t| {
        t == "signed in as carol (admin)"
    });
    let standing = browser.wait_for_text("#owners", "every owner's standing", |t| {
        t.lines().count() == 3 && t.contains("alice submit 1 of 3")
    });
    assert!(standing.contains("bob read 0 0 0 0"), "{standing}");
    let listed = browser.wait_for_text("#batches-range", "the four batches", |t| {
        t == "page 1 · 4 batches"
    });
    let rows = browser.text("#batches");
    let first: Vec<&str> = rows.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(first[0], long, "{listed}: {rows}");
    assert_eq!(
        &first[3..6],
        ["alice", "1", "manhattan"],
        "owner, priority, heuristic: {rows}"
    );
    assert!(
        rows.lines()
            .any(|row| row.contains(" carol 4 linear-conflict ")),
        "{rows}"
    );
    if let Ok(path) = std::env::var("TILESOLVE_OWNERS_SCREENSHOT") {
        browser.screenshot(&path);
    }
    browser.click("#batch-owner-filter option[value='alice']");
    browser.wait_for_text("#batches-range", "alice's batches", |t| {
        t == "page 1 · 3 batches"
    });

    // A reader sees its own standing only, and may not cancel alice's batch.
    browser.open(&format!("{url}/?token=bob-token#batch={long}"));
    browser.wait_for_text("#you", "the reader signed in", |t| {
        t == "signed in as bob (read)"
    });
    // (The work view is hidden behind the batch page: its text is read from the document.)
    wait_until("the reader's own standing", Duration::from_secs(30), || {
        let owners = browser.script("return document.getElementById('owners').textContent");
        owners.as_str()?.starts_with("bobread").then_some(())
    });
    wait_until("the cancel button off", Duration::from_secs(30), || {
        (browser.script("return document.getElementById('batch-cancel').disabled") == json!(true))
            .then_some(())
    });
}
