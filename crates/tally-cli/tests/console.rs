//! The operator's console in a real browser: headless Chromium, driven over WebDriver
//! (`chromedriver`), signs in to `tally serve`'s `/console`, provisions a population and an
//! analyst, plans a task through the form and sees its release curve, creates it, and after
//! a `tally fleet` sees the release table and the debited budget; the same pages refuse a missing or wrong token.
//!
//! Ignored when the build found no `/usr/bin/chromium` and `/usr/bin/chromedriver`
//! (`cfg(tally_browser)`, `build.rs`), unless `TALLY_REQUIRE_BROWSER=1` (as in CI), which makes
//! their absence a failure.

// The helpers this test does not use are other tests'.
#[allow(dead_code)]
mod common;
#[allow(dead_code)] // Neither `relay_command` nor PostgreSQL is needed here.
#[path = "common/listening.rs"]
mod listening;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

use common::{json, tally, temp_file};
use listening::{free_port, spawn_listening, spawn_serve};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The devices' items: 400 hold a word, 300 another, 200 an item that is markup, 5 a rare one.
/// At (ε, δ) = (1, 1e-6) the server samples at 0.2537 with threshold 14 (`tally plan
/// sample-threshold --epsilon 1 --delta 1e-6`): an item of 200 holders is withheld with
/// probability 3.4e-12, one of 5 is shown with probability 0.
const HOLDERS: [(&str, usize); 4] = [
    ("apple", 400),
    ("pear", 300),
    ("<script>alert(1)</script>", 200),
    ("rare", 5),
];

/// The counts the task's sample-and-threshold round at (ε, δ) = (1, 1e-6) releases with
/// probability 50% and 95%, as tally-accounting computes them.
fn release_points() -> Vec<String> {
    use tally_accounting::Neighbours;
    use tally_accounting::key_selection::KeySelection;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget, plan};
    let planned = plan(
        1.0,
        1e-6,
        PlanTarget::MinReleasedCount,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap();
    let selection = KeySelection::SampleThreshold(planned.params);
    [0.5, 0.95]
        .map(|p| selection.release_point(p).unwrap().to_string())
        .to_vec()
}

/// A child process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program` and waits until it listens on `port`.
fn listening(command: Command, port: u16) -> Running {
    Running(spawn_listening(command, port))
}

/// A headless Chromium with a fresh profile, through `chromedriver` on `port`.
async fn browser(port: u16, profile: &Path) -> Client {
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,1000",
        &format!("--user-data-dir={}", profile.display()),
    ];
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({ "binary": CHROMIUM, "args": args }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("chromedriver starts a session")
}

/// The visible text of the page.
async fn text(browser: &Client) -> String {
    browser
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The visible text of each element `css` selects.
async fn texts(browser: &Client, css: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for element in browser.find_all(Locator::Css(css)).await.unwrap() {
        texts.push(element.text().await.unwrap());
    }
    texts
}

/// Fills the form field `name` with `value` (replacing what it held).
async fn fill(browser: &Client, name: &str, value: &str) {
    let field = browser
        .find(Locator::Css(&format!(r#"[name="{name}"]"#)))
        .await
        .unwrap();
    field.clear().await.unwrap();
    field.send_keys(value).await.unwrap();
}

/// Clicks the button that says `label`, which sends its form, and waits for the next page
/// (the button is gone with the page it was on).
async fn click(browser: &Client, label: &str) {
    let button = browser
        .find(Locator::XPath(&format!(
            "//button[normalize-space()='{label}']"
        )))
        .await
        .unwrap();
    button.click().await.unwrap();
    let started = Instant::now();
    while button.is_enabled().await.is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{label}: no page came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(browser: &Client, url: &str, token: &str) {
    browser.goto(&format!("{url}/console/login")).await.unwrap();
    fill(browser, "token", token).await;
    click(browser, "Sign in").await;
}

/// The page `path` refuses the browser's session: it shows the sign-in form and nothing of
/// the population.
async fn refused(browser: &Client, url: &str, path: &str, why: &str) {
    browser.goto(&format!("{url}{path}")).await.unwrap();
    let page = text(browser).await;
    assert!(page.contains(why), "{path}: {page}");
    assert!(
        page.contains("Token of an operator or an analyst"),
        "{path}: {page}"
    );
    assert!(!page.contains("shop"), "{path}: {page}");
}

#[test]
#[cfg_attr(
    not(tally_browser),
    ignore = "needs /usr/bin/chromium and /usr/bin/chromedriver: source .ci/browser.sh"
)]
fn the_console_runs_a_task_from_sign_in_to_release_in_a_browser() {
    for program in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(program).exists(),
            "{program} is missing: source .ci/browser.sh"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let operator = tally(&format!(
        "token create --db {db} --role operator --name console"
    ));
    assert!(operator.status.success(), "{operator:?}");
    let operator = String::from_utf8(operator.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let (server, port) = spawn_serve(&db);
    let _server = Running(server);
    let url = format!("http://127.0.0.1:{port}");
    let driver_port = free_port();
    let mut driver = Command::new(CHROMEDRIVER);
    driver.arg(format!("--port={driver_port}"));
    let _driver = listening(driver, driver_port);
    let items: String = HOLDERS
        .iter()
        .flat_map(|&(item, n)| std::iter::repeat_n(format!("{item}\n"), n))
        .collect();
    let input = temp_file("console-items.txt", items.as_bytes());
    let devices: usize = HOLDERS.iter().map(|(_, n)| n).sum();

    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let browser = browser(driver_port, &dir.path().join("profile")).await;
            // Driven on a task of its own, so that the browser is closed (Chromium outlives a
            // killed chromedriver) before a failure is passed on.
            let driving = tokio::spawn({
                let browser = browser.clone();
                async move { drive(&browser, &url, &operator, &input, devices).await }
            });
            let outcome = driving.await;
            browser.close().await.unwrap();
            if let Err(failure) = outcome {
                std::panic::resume_unwind(failure.into_panic());
            }
        });
}

async fn drive(browser: &Client, url: &str, operator: &str, input: &Path, devices: usize) {
    // Without a session, and with a wrong token, every page is the sign-in form.
    refused(browser, url, "/console", "Sign in with the token").await;
    sign_in(
        browser,
        url,
        &format!("tally_{}_{}", "0".repeat(16), "0".repeat(64)),
    )
    .await;
    assert!(
        text(browser)
            .await
            .contains("the credential is unknown or revoked")
    );

    // The operator provisions a population and an analyst over it.
    sign_in(browser, url, operator).await;
    assert!(text(browser).await.contains("signed in as operator"));
    fill(browser, "name", "shop").await;
    fill(browser, "epsilon", "4").await;
    fill(browser, "delta", "1e-5").await;
    fill(browser, "min_cohort", "100").await;
    click(browser, "Create population").await;
    assert!(text(browser).await.contains("Budget ε = 4"));
    browser
        .goto(&format!("{url}/console/credentials"))
        .await
        .unwrap();
    fill(browser, "name", "shop analyst").await;
    fill(browser, "populations", "shop").await;
    click(browser, "Create credential").await;
    let analyst = browser
        .find(Locator::Id("issued-token"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    click(browser, "Sign out").await;

    // The analyst plans the task, reads the guarantee, then confirms it.
    sign_in(browser, url, analyst.trim()).await;
    browser
        .goto(&format!("{url}/console/tasks/new?kind=histogram"))
        .await
        .unwrap();
    // The form of a sample-and-threshold histogram: the fields of `tally task create`.
    fill(browser, "expected_population", &devices.to_string()).await;
    fill(browser, "privacy.epsilon", "1").await;
    fill(browser, "privacy.delta", "1e-6").await;
    fill(browser, "rounds.deadline_secs", "120").await;
    fill(browser, "rounds.max_attempts", "1").await;
    click(browser, "Show the plan").await;
    let plan = text(browser).await;
    assert!(
        plan.contains("The guarantee the server fixes for this task"),
        "{plan}"
    );
    assert!(plan.contains("add-remove"), "{plan}");
    // Before anything is created, the release curve of the calibrated round, drawn, with the
    // counts the accountant says it releases half and 95% of the time.
    let curve = browser.find(Locator::Id("release-curve")).await.unwrap();
    assert!(curve.is_displayed().await.unwrap());
    let (width, height) = (
        curve.attr("width").await.unwrap(),
        curve.attr("height").await.unwrap(),
    );
    assert!(width.is_some() && height.is_some(), "{width:?} {height:?}");
    let drawn = browser
        .find_all(Locator::Css("#release-curve polyline"))
        .await
        .unwrap();
    assert_eq!(drawn.len(), 3, "S&T, Laplace and Gaussian thresholding");
    let marked = texts(browser, "tr[data-key=sample-threshold] td.n").await;
    assert_eq!(marked, release_points(), "{plan}");
    if let Ok(path) = std::env::var("TALLY_CONSOLE_SCREENSHOT") {
        std::fs::write(PathBuf::from(path), browser.screenshot().await.unwrap()).unwrap();
    }
    click(browser, "Create the task").await;
    let task_url = browser.current_url().await.unwrap().to_string();
    let task_id = task_url.rsplit('/').next().unwrap().to_owned();
    assert!(task_id.starts_with("t-"), "{task_url}");
    assert!(text(browser).await.contains("Not released yet."));

    // A fleet of devices answers through the operator's relay.
    let report = json(&format!(
        "fleet --server {url} --token {operator} --input {} --task {task_id} --seed 7 --json",
        input.display()
    ));
    assert_eq!(report["total"]["accepted"], devices, "{report}");

    // The release, its markup item as text, and the debited budget. The round closes as its
    // cohort fills; the release follows within moments.
    let started = Instant::now();
    loop {
        browser.goto(&task_url).await.unwrap();
        let page = text(browser).await;
        if page.contains("finished") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{page}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cells = texts(browser, "table.release td").await;
    for released in ["apple", "pear", "<script>alert(1)</script>"] {
        assert!(cells.iter().any(|c| c == released), "{released}: {cells:?}");
    }
    assert!(!cells.iter().any(|c| c == "rare"), "{cells:?}");
    assert!(browser.get_alert_text().await.is_err(), "a script ran");
    browser
        .goto(&format!("{url}/console/ledger"))
        .await
        .unwrap();
    let ledger = text(browser).await;
    assert!(ledger.contains(&task_id), "{ledger}");
    assert!(!ledger.contains("Nothing debited yet."), "{ledger}");

    // With the analyst's credential revoked, its session has ended: the pages refuse; signed
    // out, without a cookie, they refuse too.
    let analyst_id = analyst.trim().split('_').nth(1).unwrap();
    let revoked = tally(&format!(
        "token revoke --server {url} --token {operator} {analyst_id}"
    ));
    assert!(revoked.status.success(), "{revoked:?}");
    let pages = [
        "/console".to_owned(),
        "/console/ledger".to_owned(),
        format!("/console/tasks/{task_id}"),
    ];
    for path in &pages {
        refused(browser, url, path, "this sign-in has ended").await;
    }
    browser.delete_all_cookies().await.unwrap();
    for path in &pages {
        refused(browser, url, path, "Sign in with the token").await;
    }
}
