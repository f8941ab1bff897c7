//! What a fleet measured: counts, throughput and upload latency, per round and in total.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;
use tally_messages::RoundQuery;

use super::{Chunk, FleetConfig};

/// Latencies are recorded in microseconds, from 1 µs to an hour, to 3 significant digits.
const LATENCY_MAX_MICROS: u64 = 3_600_000_000;

/// How many devices did what.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Devices that checked in (each then tried its one upload; a device whose round closed
    /// in between is not counted as accepted or refused).
    pub devices: u64,
    /// Uploads accepted: reports and abstentions.
    pub accepted: u64,
    /// Accepted uploads that carried a report.
    pub reports: u64,
    /// Accepted uploads that abstained.
    pub abstentions: u64,
    /// Uploads refused, by error code.
    pub rejected: BTreeMap<String, u64>,
    /// Upload requests answered.
    pub upload_requests: u64,
}

/// Upload request latency, retries included, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

/// One round the fleet took part in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundReport {
    /// The round's id.
    pub round_id: String,
    /// Its task.
    pub task_id: String,
    /// The round of the task, from 1.
    pub round: u32,
    /// Which run of the round, from 1.
    pub attempt: u32,
    /// What the devices did.
    #[serde(flatten)]
    pub counts: Counts,
    /// From the first request to the last answer, in seconds.
    pub wall_secs: f64,
    /// Accepted uploads per second of wall time.
    pub uploads_per_sec: f64,
    /// Upload request latency.
    pub latency_ms: LatencySummary,
}

/// The fleet's whole run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Totals {
    /// What the devices did, over every round.
    #[serde(flatten)]
    pub counts: Counts,
    /// The whole run, waiting for rounds included, in seconds.
    pub wall_secs: f64,
    /// Time spent in rounds (the sum of their wall times), in seconds.
    pub busy_secs: f64,
    /// Accepted uploads per second spent in rounds.
    pub uploads_per_sec: f64,
    /// Upload request latency over every round.
    pub latency_ms: LatencySummary,
}

/// What a fleet did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetReport {
    /// Devices in the fleet.
    pub devices: usize,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Devices per request.
    pub batch: usize,
    /// The rounds, in the order the fleet did them.
    pub rounds: Vec<RoundReport>,
    /// Over every round.
    pub total: Totals,
}

impl FleetReport {
    pub(super) fn new(
        devices: usize,
        config: &FleetConfig,
        rounds: Vec<RoundReport>,
        total: RoundTally,
        wall: Duration,
    ) -> Self {
        let busy_secs: f64 = rounds.iter().map(|r| r.wall_secs).sum();
        Self {
            devices,
            concurrency: config.concurrency,
            batch: config.batch,
            total: Totals {
                uploads_per_sec: rate(total.counts.accepted, busy_secs),
                latency_ms: total.latencies.summary(),
                counts: total.counts,
                wall_secs: wall.as_secs_f64(),
                busy_secs,
            },
            rounds,
        }
    }
}

impl RoundReport {
    pub(super) fn new(query: &RoundQuery, tally: &RoundTally, wall: Duration) -> Self {
        let wall_secs = wall.as_secs_f64();
        Self {
            round_id: query.round_id.clone(),
            task_id: query.task_id.clone(),
            round: query.round,
            attempt: query.attempt,
            counts: tally.counts.clone(),
            wall_secs,
            uploads_per_sec: rate(tally.counts.accepted, wall_secs),
            latency_ms: tally.latencies.summary(),
        }
    }
}

fn rate(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// Counts and latencies while a round runs.
pub(super) struct RoundTally {
    pub(super) counts: Counts,
    pub(super) latencies: Latencies,
}

impl RoundTally {
    pub(super) fn new() -> Self {
        Self {
            counts: Counts::default(),
            latencies: Latencies::new(),
        }
    }

    pub(super) fn absorb(&mut self, chunk: &Chunk) {
        let counts = &mut self.counts;
        counts.devices += chunk.devices;
        counts.reports += chunk.reports;
        counts.abstentions += chunk.abstentions;
        counts.accepted += chunk.reports + chunk.abstentions;
        for code in &chunk.rejected {
            *counts.rejected.entry(code.name().to_owned()).or_default() += 1;
        }
        for &latency in &chunk.latencies {
            counts.upload_requests += 1;
            self.latencies.record(latency);
        }
    }

    pub(super) fn merge(&mut self, other: Self) {
        let counts = &mut self.counts;
        counts.devices += other.counts.devices;
        counts.accepted += other.counts.accepted;
        counts.reports += other.counts.reports;
        counts.abstentions += other.counts.abstentions;
        counts.upload_requests += other.counts.upload_requests;
        for (code, n) in other.counts.rejected {
            *counts.rejected.entry(code).or_default() += n;
        }
        self.latencies.merge(&other.latencies);
    }
}

/// A latency histogram.
pub(super) struct Latencies(Histogram<u64>);

impl Latencies {
    fn new() -> Self {
        // Unwrap safety: constant bounds that hdrhistogram accepts (low ≥ 1, high ≥ 2·low,
        // 3 significant digits).
        Self(Histogram::new_with_bounds(1, LATENCY_MAX_MICROS, 3).expect("valid bounds"))
    }

    fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.0.saturating_record(micros.max(1));
    }

    fn merge(&mut self, other: &Self) {
        // Unwrap safety: both histograms have the same bounds, so every value fits.
        self.0.add(&other.0).expect("same bounds");
    }

    fn summary(&self) -> LatencySummary {
        if self.0.is_empty() {
            return LatencySummary::default();
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        LatencySummary {
            p50: ms(self.0.value_at_quantile(0.5)),
            p90: ms(self.0.value_at_quantile(0.9)),
            p99: ms(self.0.value_at_quantile(0.99)),
            max: ms(self.0.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use tally_messages::ErrorCode;

    use super::*;

    #[test]
    fn tallies_add_up_and_percentiles_are_ordered() {
        let mut round = RoundTally::new();
        for millis in 1..=100u64 {
            round.absorb(&Chunk {
                devices: 10,
                reports: 3,
                abstentions: 6,
                rejected: vec![ErrorCode::ReusedToken],
                latencies: vec![Duration::from_millis(millis)],
            });
        }
        round.absorb(&Chunk::default());
        let mut total = RoundTally::new();
        total.merge(RoundTally::new());
        let summary = round.latencies.summary();
        total.merge(round);
        let counts = &total.counts;
        assert_eq!(
            (
                counts.devices,
                counts.accepted,
                counts.reports,
                counts.abstentions
            ),
            (1000, 900, 300, 600)
        );
        assert_eq!(counts.upload_requests, 100);
        assert_eq!(counts.rejected.get("reused_token"), Some(&100));
        assert!((summary.p50 - 50.0).abs() < 0.1, "{summary:?}");
        assert!((summary.p99 - 99.0).abs() < 0.1, "{summary:?}");
        assert!(summary.p50 <= summary.p90 && summary.p90 <= summary.p99);
        assert!((summary.max - 100.0).abs() < 0.1, "{summary:?}");
        assert_eq!(total.latencies.summary(), summary);
    }
}
