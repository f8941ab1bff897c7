//! The server's counters, exposed on `/metrics` in the Prometheus (OpenMetrics) text format.
//!
//! # Privacy
//!
//! No counter depends on what a device reported: uploads are counted without telling reports
//! from abstentions, so that subtracting the released counts from the reports accepted cannot
//! reveal a report the threshold suppressed.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tally_messages::ErrorCode;

/// A `reason` label: why a request or an upload was refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: &'static str,
}

/// An `outcome` label: how a round ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

/// How a round ended, for the `tally_rounds_total` counter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RoundOutcome {
    /// Released through the mechanism's release rule.
    Released,
    /// Closed below the minimum cohort.
    Short,
    /// Cut short by a cancellation or a restart.
    Aborted,
}

/// The server's counters.
pub(crate) struct Metrics {
    registry: Registry,
    rejections: Family<Reason, Counter>,
    uploads: Counter,
    tokens: Counter,
    rounds: Family<Outcome, Counter>,
    open_rounds: Gauge,
}

impl Metrics {
    /// Registers every counter, each rejection reason at zero.
    pub(crate) fn new() -> Self {
        let mut registry = Registry::default();
        let rejections = Family::<Reason, Counter>::default();
        let uploads = Counter::default();
        let tokens = Counter::default();
        let rounds = Family::<Outcome, Counter>::default();
        let open_rounds = Gauge::default();
        registry.register(
            "tally_rejections",
            "Requests and uploads refused, by reason",
            rejections.clone(),
        );
        registry.register(
            "tally_uploads",
            "Uploads accepted (reports and abstentions together)",
            uploads.clone(),
        );
        registry.register(
            "tally_tokens_issued",
            "Upload tokens issued",
            tokens.clone(),
        );
        registry.register("tally_rounds", "Rounds closed, by outcome", rounds.clone());
        registry.register(
            "tally_open_rounds",
            "Rounds accepting uploads",
            open_rounds.clone(),
        );
        for code in ErrorCode::ALL {
            drop(rejections.get_or_create(&Reason {
                reason: code.name(),
            }));
        }
        Self {
            registry,
            rejections,
            uploads,
            tokens,
            rounds,
            open_rounds,
        }
    }

    /// Counts one refusal.
    pub(crate) fn reject(&self, code: ErrorCode) {
        self.reject_many(code, 1);
    }

    /// Counts `count` refusals for one reason (the messages of a relayed batch).
    pub(crate) fn reject_many(&self, code: ErrorCode, count: u64) {
        self.rejections
            .get_or_create(&Reason {
                reason: code.name(),
            })
            .inc_by(count);
    }

    /// Counts accepted uploads, reports and abstentions alike.
    pub(crate) fn accepted(&self, uploads: u64) {
        self.uploads.inc_by(uploads);
    }

    /// Counts issued tokens.
    pub(crate) fn issued(&self, tokens: u64) {
        self.tokens.inc_by(tokens);
    }

    /// Counts a round opening.
    pub(crate) fn round_opened(&self) {
        self.open_rounds.inc();
    }

    /// Counts a round closing.
    pub(crate) fn round_closed(&self, outcome: RoundOutcome) {
        self.open_rounds.dec();
        let outcome = match outcome {
            RoundOutcome::Released => "released",
            RoundOutcome::Short => "short",
            RoundOutcome::Aborted => "aborted",
        };
        self.rounds.get_or_create(&Outcome { outcome }).inc();
    }

    /// The counters in the text exposition format.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Unwrap safety: writing to a String cannot fail.
        encode(&mut out, &self.registry).expect("encoding into a String");
        out
    }
}
