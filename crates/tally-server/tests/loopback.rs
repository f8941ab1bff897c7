//! End to end over loopback TCP: a fleet of simulated devices (tally-client, the simulator's
//! respond code, real HTTP) runs a histogram task, a multi-round TrieHH++ task and a
//! multi-round quantile task, and the releases match the devices' data within sampling error.

use std::collections::HashMap;

use tally_client::{Client, Fleet, FleetConfig};
use tally_messages::{RoundPolicy, TaskInfo, TaskResult, TaskState};
use tally_server::Server;
use tokio::net::TcpListener;

mod common;

/// A server on a free loopback port, an analyst's client and the devices' client (an
/// operator's credential relaying for the whole fleet).
struct Served {
    server: Server,
    analyst: Client,
    devices: Client,
}

/// Serves the API on a free loopback port, as `tally serve` does.
async fn serve(db: &str) -> Served {
    common::population(db, common::POPULATION, (10.0, 1e-5)).await;
    let credentials = common::credentials(db).await;
    let server = Server::start(db).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let url = format!("http://{address}");
    let router = server.router_for(address);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let client = Client::new(&url).unwrap();
    Served {
        server,
        analyst: client.clone().with_token(&credentials.analyst),
        devices: client.with_token(&credentials.operator),
    }
}

/// Runs `items` as a fleet for `task` and returns the task's released document.
async fn run_fleet(served: &Served, task: &TaskInfo, items: Vec<String>) -> TaskResult {
    let client = &served.analyst;
    let config = FleetConfig {
        task: Some(task.id.clone()),
        seed: Some(7),
        ..FleetConfig::default()
    };
    let report = Fleet::new(served.devices.clone(), items, config)
        .unwrap()
        .run(|_| {})
        .await
        .unwrap();
    assert!(report.total.counts.rejected.is_empty(), "{report:?}");
    assert!(report.total.counts.accepted > 0);
    let info = client.task(&task.id).await.unwrap();
    assert_eq!(info.state, TaskState::Finished, "{info:?}");
    client.result(&task.id).await.unwrap()
}

/// Whether `estimate` is within 6 standard deviations of `truth` under sampling at `rate`.
fn within_sampling_error(estimate: f64, truth: u64, rate: f64) -> bool {
    let sd = (truth as f64 * (1.0 - rate) / rate).sqrt();
    (estimate - truth as f64).abs() <= 6.0 * sd
}

fn policy() -> RoundPolicy {
    RoundPolicy {
        min_cohort: 1000,
        cohort_target: None,
        deadline_secs: 600,
        max_attempts: 1,
        max_report_bytes: 64,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_twenty_thousand_devices_releases_their_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&format!("sqlite://{}", dir.path().join("t.db").display())).await;
    // Item k is held by 4000 / k devices; the rest hold items of their own.
    let mut truth: HashMap<String, u64> = HashMap::new();
    let mut items = Vec::new();
    for k in 1..=40u64 {
        for _ in 0..4000 / k {
            items.push(format!("item-{k}"));
        }
        truth.insert(format!("item-{k}"), 4000 / k);
    }
    while items.len() < 20_000 {
        items.push(format!("own-{}", items.len()));
    }
    let mut spec = common::spec(common::histogram(0.5), 1.0, policy());
    spec.expected_population = items.len() as u64;
    let client = &served.analyst;
    let task = client.create_task(&spec).await.unwrap();
    let TaskResult::Histogram(release) = run_fleet(&served, &task, items).await else {
        panic!("a histogram task releases a histogram");
    };
    let rate = release.parameters["sampling_rate"].as_f64().unwrap();
    let threshold = release.parameters["threshold"].as_u64().unwrap();
    assert_eq!(release.execution, "federated");
    assert!(release.items.len() >= 10, "{release:?}");
    for item in &release.items {
        let true_count = truth
            .get(&item.item)
            .copied()
            .unwrap_or_else(|| panic!("{} was released but no two devices hold it", item.item));
        assert!(item.count.unwrap() >= threshold);
        assert!(
            within_sampling_error(item.estimate.unwrap(), true_count, rate),
            "{item:?} against {true_count}"
        );
    }
    // Every item with many holders is released.
    for k in 1..=5 {
        assert!(release.items.iter().any(|i| i.item == format!("item-{k}")));
    }
    let ledger = client.ledger().await.unwrap();
    assert_eq!(ledger[0].entries[0].task_id, task.id);
    served.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_twelve_thousand_devices_finds_the_heavy_hitters_level_by_level() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&format!("sqlite://{}", dir.path().join("t.db").display())).await;
    let words: [(&str, u64); 4] = [
        ("apple", 3000),
        ("apply", 2000),
        ("banana", 1500),
        ("band", 1000),
    ];
    let mut items: Vec<String> = words
        .iter()
        .flat_map(|&(w, n)| std::iter::repeat_n(w.to_owned(), n as usize))
        .collect();
    while items.len() < 12_000 {
        items.push(format!("z{}", items.len()));
    }
    let mut spec = common::spec(common::triehh_plus(7, 0.3), 4.0, policy());
    spec.expected_population = items.len() as u64;
    let client = &served.analyst;
    let task = client.create_task(&spec).await.unwrap();
    let TaskResult::HeavyHitters(release) = run_fleet(&served, &task, items).await else {
        panic!("a TrieHH++ task releases heavy hitters");
    };
    let found: Vec<&str> = release.items.iter().map(|i| i.item.as_str()).collect();
    assert_eq!(found, ["apple", "apply", "banana", "band"], "{release:?}");
    for (item, &(_, truth)) in release.items.iter().zip(&words) {
        assert!(
            within_sampling_error(item.estimate.unwrap(), truth, 0.3),
            "{item:?}"
        );
    }
    let info = client.task(&task.id).await.unwrap();
    assert_eq!(info.rounds_released, 7, "every level up to the terminators");
    served.server.shutdown().await;
}

/// `n` devices, device `i` holding `100·(i/n)²`: the share of devices below `v` is
/// [`rank`]`(v)`.
fn squares(n: u32) -> Vec<String> {
    (0..n)
        .map(|i| {
            let u = f64::from(i) / f64::from(n);
            (100.0 * u * u).to_string()
        })
        .collect()
}

/// The share of [`squares`] devices below `v`.
fn rank(v: f64) -> f64 {
    (v / 100.0).sqrt()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_sixteen_thousand_devices_releases_their_quantiles() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&format!("sqlite://{}", dir.path().join("t.db").display())).await;
    let n = 16_000u32;
    let items = squares(n);
    let mut spec = common::spec(common::quantiles(3, 0.5), 4.0, policy());
    spec.expected_population = u64::from(n);
    let client = &served.analyst;
    let task = client.create_task(&spec).await.unwrap();
    let TaskResult::Quantiles(release) = run_fleet(&served, &task, items).await else {
        panic!("a quantile task releases quantiles");
    };
    assert_eq!(release.mechanism, "hierarchical histogram");
    assert_eq!(release.parameters["levels"], 3);
    // 4^3 = 64 leaves over [0, 100].
    let leaf = 100.0 / 64.0;
    assert_eq!(release.parameters["resolution"], leaf);
    // Every leaf holds at least 100·(1 − sqrt(1 − 1/64)) ≈ 0.79 % of the devices, about 63
    // sampled ones, above the threshold: no node is suppressed, so the estimated total and
    // ranks carry sampling error alone.
    let threshold = release.parameters["threshold"].as_u64().unwrap();
    assert!(threshold < 40, "{}", release.parameters);
    let total = release.parameters["estimated_total"].as_f64().unwrap();
    assert!(within_sampling_error(total, u64::from(n), 0.5), "{total}");
    assert_eq!(release.quantiles.len(), 3);
    for row in &release.quantiles {
        // The estimate is a leaf boundary where the estimated rank crosses q: off by at most
        // the share of the leaves on either side of the true quantile, plus sampling error
        // (6 standard deviations of a rank at p_s = 0.5 over 16,000 devices: 6·sqrt(0.25/8000)
        // ≈ 0.034 at most, counting the rank and the total as independent).
        let truth = 100.0 * row.quantile * row.quantile;
        let grid = rank(truth + leaf) - rank((truth - leaf).max(0.0));
        let error = (rank(row.value) - row.quantile).abs();
        assert!(
            error <= grid + 0.034,
            "{row:?}: rank error {error}, grid {grid}"
        );
    }
    let info = client.task(&task.id).await.unwrap();
    assert_eq!(info.rounds_released, 3, "one round per level");
    served.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_sixteen_thousand_devices_finds_quantiles_by_binary_search() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(&format!("sqlite://{}", dir.path().join("t.db").display())).await;
    let n = 16_000u32;
    let items = squares(n);
    let kind = tally_messages::TaskKind::Quantiles {
        method: tally_messages::QuantileMethod::BinarySearch,
        quantiles: vec![0.25, 0.75],
        branching: None,
        levels: 6,
        consistent: false,
        composition: Some(tally_accounting::composition::Composition::Basic),
        range: Some([0.0, 100.0]),
        sampling_rate: None,
        threshold: None,
    };
    let mut spec = common::spec(kind, 4.0, policy());
    spec.expected_population = u64::from(n);
    let client = &served.analyst;
    let task = client.create_task(&spec).await.unwrap();
    let TaskResult::Quantiles(release) = run_fleet(&served, &task, items).await else {
        panic!("a quantile task releases quantiles");
    };
    assert_eq!(release.mechanism, "binary search");
    assert_eq!(release.parameters["rounds"], 12);
    let rate = release.parameters["sampling_rate"].as_f64().unwrap();
    // Each round estimates the share at or below its split point as c_0/(c_0 + c_1) over
    // about n·p_s sampled devices: 6 standard deviations of that ratio, at most
    // 6·sqrt(0.25/(n·p_s)), bound how far a round can err; the search ends within one
    // interval (100/64 wide) of a split point whose share is that close to q.
    let noise = 6.0 * (0.25 / (f64::from(n) * rate)).sqrt();
    for row in &release.quantiles {
        let [lo, hi] = row.interval.unwrap();
        assert_eq!(hi.to_bits(), row.value.to_bits(), "{row:?}");
        assert!((hi - lo - 100.0 / 64.0).abs() < 1e-9, "{row:?}");
        let error = (rank(row.value) - row.quantile)
            .abs()
            .min((rank(lo) - row.quantile).abs());
        let width = rank(hi) - rank(lo);
        assert!(
            error <= noise + width,
            "{row:?}: rank error {error}, noise {noise}"
        );
    }
    let info = client.task(&task.id).await.unwrap();
    assert_eq!(info.rounds_released, 12, "6 rounds per quantile");
    served.server.shutdown().await;
}
