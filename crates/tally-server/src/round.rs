//! One open round: its published query, the upload tokens it issued, and its aggregator.

use std::collections::hash_map::Entry;
use std::sync::Mutex;
use std::time::Instant;

use rand::Rng;
use rustc_hash::FxHashMap;
use tally_core::protocol::wire::WireAggregator;
use tally_messages::{ErrorCode, Rejection, RoundQuery, Upload};

/// What one batch of uploads did.
pub(crate) struct BatchOutcome {
    /// Reports counted.
    pub(crate) reports: u64,
    /// Abstentions counted.
    pub(crate) abstentions: u64,
    /// Uploads refused, with why.
    pub(crate) rejected: Vec<Rejection>,
    /// Whether this batch brought the round to its cohort target.
    pub(crate) reached_target: bool,
}

/// What a closed round hands to its task.
pub(crate) struct Closed {
    /// Uploads accepted (reports and abstentions): the cohort.
    pub(crate) uploads: u64,
    /// The aggregator, to release or drop.
    pub(crate) aggregator: Box<dyn WireAggregator>,
}

/// An open round.
pub(crate) struct Round {
    /// What devices are asked.
    pub(crate) query: RoundQuery,
    /// When it closes whatever its cohort.
    pub(crate) deadline: Instant,
    cohort_target: u64,
    /// Why a report the round does not admit is refused.
    refusal: ErrorCode,
    state: Mutex<RoundState>,
}

struct RoundState {
    /// `None` once closed.
    aggregator: Option<Box<dyn WireAggregator>>,
    /// Issued tokens and whether each was used.
    tokens: FxHashMap<u128, bool>,
    /// The token issued to each device credential that checked in.
    devices: FxHashMap<String, u128>,
    uploads: u64,
}

impl Round {
    /// A round publishing `query`, counting into `aggregator`, which refuses the reports it
    /// does not admit with `refusal`.
    pub(crate) fn new(
        query: RoundQuery,
        deadline: Instant,
        cohort_target: u64,
        aggregator: Box<dyn WireAggregator>,
        refusal: ErrorCode,
    ) -> Self {
        Self {
            query,
            deadline,
            cohort_target,
            refusal,
            state: Mutex::new(RoundState {
                aggregator: Some(aggregator),
                tokens: FxHashMap::default(),
                devices: FxHashMap::default(),
                uploads: 0,
            }),
        }
    }

    /// Issues `devices` fresh single-use tokens (a relay's check-in), or `None` if the round
    /// is closed.
    pub(crate) fn check_in<R: Rng + ?Sized>(
        &self,
        devices: u32,
        rng: &mut R,
    ) -> Option<Vec<String>> {
        let mut state = self.lock();
        state.aggregator.as_ref()?;
        let tokens = (0..devices)
            .map(|_| format!("{:032x}", fresh_token(&mut state.tokens, rng)))
            .collect();
        Some(tokens)
    }

    /// The one token of the device credential `device` in this round: fresh at its first
    /// check-in, the same at every later one (spent or not), so that a device never holds
    /// two. `None` if the round is closed.
    pub(crate) fn check_in_device<R: Rng + ?Sized>(
        &self,
        device: &str,
        rng: &mut R,
    ) -> Option<String> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.aggregator.as_ref()?;
        let token = match state.devices.get(device) {
            Some(&token) => token,
            None => {
                let token = fresh_token(&mut state.tokens, rng);
                state.devices.insert(device.to_owned(), token);
                token
            }
        };
        Some(format!("{token:032x}"))
    }

    /// Validates and counts a batch, or `None` if the round is closed. Each token is good for
    /// one upload: it is spent by its first upload, accepted or not.
    ///
    /// # Privacy
    ///
    /// A round never counts more than its cohort target: once it holds that many uploads,
    /// the rest of the batch, and every later batch until the round closes, is refused as
    /// [`ErrorCode::ClosedRound`] with its token unspent. A mechanism whose guarantee is
    /// computed for at most that many devices (Count-Min's blanket cap takes a union bound
    /// over them) relies on it.
    pub(crate) fn upload(&self, uploads: Vec<Upload>) -> Option<BatchOutcome> {
        let max_bytes = self.query.max_report_bytes as usize;
        let mut guard = self.lock();
        let state = &mut *guard;
        let aggregator = state.aggregator.as_mut()?;
        let mut outcome = BatchOutcome {
            reports: 0,
            abstentions: 0,
            rejected: Vec::new(),
            reached_target: false,
        };
        for (index, upload) in uploads.into_iter().enumerate() {
            let counted = state.uploads + outcome.reports + outcome.abstentions;
            let verdict = match parse_token(&upload.token).and_then(|t| state.tokens.get_mut(&t)) {
                _ if counted >= self.cohort_target => Err(ErrorCode::ClosedRound),
                None => Err(ErrorCode::UnknownToken),
                Some(used) if *used => Err(ErrorCode::ReusedToken),
                Some(used) => {
                    *used = true;
                    match upload.report {
                        None => Ok(false),
                        Some(report) if report.len() > max_bytes => Err(ErrorCode::Oversized),
                        Some(report) => aggregator
                            .absorb(report)
                            .map(|()| true)
                            .map_err(|_| self.refusal),
                    }
                }
            };
            match verdict {
                Ok(true) => outcome.reports += 1,
                Ok(false) => outcome.abstentions += 1,
                Err(code) => outcome.rejected.push(Rejection {
                    // Unwrap safety: batches are capped far below 2^32 uploads.
                    index: u32::try_from(index).expect("batch index fits u32"),
                    code,
                }),
            }
        }
        let before = state.uploads;
        state.uploads += outcome.reports + outcome.abstentions;
        outcome.reached_target = before < self.cohort_target && state.uploads >= self.cohort_target;
        Some(outcome)
    }

    /// Uploads accepted so far (reports and abstentions), and the cohort that closes it.
    pub(crate) fn cohort(&self) -> (u64, u64) {
        (self.lock().uploads, self.cohort_target)
    }

    /// Closes the round: no more check-ins or uploads. `None` if it was already closed.
    pub(crate) fn close(&self) -> Option<Closed> {
        let mut state = self.lock();
        let aggregator = state.aggregator.take()?;
        state.tokens = FxHashMap::default();
        state.devices = FxHashMap::default();
        Some(Closed {
            uploads: state.uploads,
            aggregator,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RoundState> {
        // A panic while holding the lock leaves counts that may be half-updated; refusing
        // to go on is the only safe answer.
        self.state.lock().expect("round state lock poisoned")
    }
}

/// Draws a token not issued before and records it as unused.
fn fresh_token<R: Rng + ?Sized>(tokens: &mut FxHashMap<u128, bool>, rng: &mut R) -> u128 {
    loop {
        let token: u128 = rng.next_u64() as u128 | (u128::from(rng.next_u64()) << 64);
        if let Entry::Vacant(slot) = tokens.entry(token) {
            slot.insert(false);
            return token;
        }
    }
}

fn parse_token(token: &str) -> Option<u128> {
    if token.len() != 32 {
        return None;
    }
    u128::from_str_radix(token, 16).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_core::protocol::wire::{NotAdmitted, WireCell};
    use tally_messages::{Ask, PROTOCOL_VERSION, Sampling};

    use super::*;

    /// Admits every report.
    struct AdmitAll;

    impl WireAggregator for AdmitAll {
        fn absorb(&mut self, _: String) -> Result<(), NotAdmitted> {
            Ok(())
        }

        fn release(self: Box<Self>) -> Vec<WireCell> {
            Vec::new()
        }
    }

    /// The query of a test round `id` of task `task` asking for items (reports of at most
    /// 16 bytes), with aggregator-side sampling.
    pub(crate) fn item_query(id: &str, task: &str) -> RoundQuery {
        RoundQuery {
            version: PROTOCOL_VERSION,
            round_id: id.into(),
            task_id: task.into(),
            population: "p".into(),
            round: 1,
            attempt: 1,
            deadline: 0,
            max_report_bytes: 16,
            min_cohort: 1,
            cohort_target: 100,
            ask: Ask::Item { sampling_rate: 0.5 },
            sampling: Sampling::Aggregator,
        }
    }

    /// A round with a cohort target of 3 that 5 devices upload to in one batch, then 1 more
    /// in another, before it closes: it counts 3 uploads and refuses the other 3 as closed,
    /// their tokens unspent. Without the check it counted all 6.
    #[test]
    fn a_round_never_counts_more_than_its_cohort_target() {
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let round = Round::new(
            item_query("r", "t"),
            deadline,
            3,
            Box::new(AdmitAll),
            ErrorCode::Malformed,
        );
        let mut tokens = round
            .check_in(6, &mut ChaCha20Rng::seed_from_u64(1))
            .unwrap();
        let last = tokens.pop().unwrap();
        let upload = |token: String| Upload {
            token,
            report: Some("x".to_owned()),
        };
        let first = round
            .upload(tokens.into_iter().map(upload).collect())
            .unwrap();
        assert_eq!((first.reports, first.abstentions), (3, 0));
        assert!(first.reached_target);
        let refused: Vec<_> = first.rejected.iter().map(|r| (r.index, r.code)).collect();
        assert_eq!(
            refused,
            [(3, ErrorCode::ClosedRound), (4, ErrorCode::ClosedRound)]
        );
        let second = round.upload(vec![upload(last)]).unwrap();
        assert_eq!(second.reports + second.abstentions, 0);
        assert_eq!(second.rejected[0].code, ErrorCode::ClosedRound);
        assert_eq!(round.close().unwrap().uploads, 3);
    }
}
