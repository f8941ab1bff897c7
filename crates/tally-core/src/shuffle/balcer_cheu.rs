//! The Balcer–Cheu 2020 histogram protocol `P^hist` (docs/algorithms.md §7.3; Balcer & Cheu,
//! "Separating Local & Shuffled Differential Privacy via Histograms", ITC 2020, Fig. 2).
//!
//! **Randomizer.** A client holding `x ∈ 0..d` sends the message `x` and, for every cell `j` of
//! the domain, one noise message `j` with probability `p` (independent `Ber(p)` coins), so
//! `1 + d·p` messages of `⌈log2 d⌉` bits in expectation. `p` comes from
//! [`tally_accounting::balcer_cheu`]: the larger (less noisy) of the binary-sum noise
//! probability at `(ε/2, δ/2)` and the exact analysis's.
//!
//! **Analyzer** (the paper's, kept exactly). For each cell `j`, `c*_j = (messages equal to
//! j)/n`; the frequency estimate is `c*_j − p` if `c*_j > 1` and 0 otherwise. As counts
//! (the round's [`Estimates`]) that is `n·(c*_j − p)` or 0. The estimate is never
//! negative and is exactly 0 for a cell no client holds (its `Bin(n, p)` noise never exceeds
//! `n`), but it is biased towards 0 for small counts by at most `1 − p` in frequency
//! ([`tally_accounting::balcer_cheu::BalcerCheu::error_bound`]).
//!
//! **As a round** ([`BalcerCheuHistogram::round`]): a device's report is its whole list of
//! messages ([`BalcerCheuMessages`], sorted on the wire by
//! [`crate::protocol::encode_messages`]), held as the ranges of cells it does not cover so
//! that drawing and counting it cost `O(d(1 − p) + 1)`, not `O(d)`; behind the shuffler
//! ([`crate::protocol::Shuffled`]) the report is split into its messages and the analyzer
//! counts them one at a time, never knowing which came from the same device.
//!
//! **Drawn from the counts** ([`run_per_cell`](BalcerCheuHistogram::run_per_cell)): the
//! shuffler's output is the vector of per-cell message counts, and since every device's coins
//! are independent, cell `j`'s count is `#{devices holding j} + Bin(n, p)`, independently across
//! cells; it is drawn so with the exact binomial sampler (which counts the `Bin(n, 1 − p)`
//! absent messages by gap skipping), in the law of the devices' messages summed. The round
//! draws its aggregate so ([`CountedRound::aggregate_counts`]) when the calibrated `n` devices
//! answer.
//!
//! # Privacy
//!
//! `(ε, δ)`-DP for replace-one neighbours in the shuffle model (the adversary sees the
//! anonymous multiset of all `n` clients' messages), by the analysis that chose `p`
//! ([`tally_accounting::balcer_cheu`]): Balcer–Cheu Theorem 3.2 (binary sums calibrated at
//! `(ε/2, δ/2)`, `p` rounded down, i.e. towards more noise; `ε ∈ (0, 2]` and
//! `n ≥ (400/ε²) ln(4/δ)`), or the exact privacy-loss distribution of one message moving
//! between two cells with `Bin(n, p)` blankets ([`tally_accounting::blanket`]; any `ε`, and
//! `n` large enough that `p = 1/2` reaches `δ`). Every noise coin is exact: the absent coins are an exact Poisson
//! sampler at rate `1 − p` (exact in `f64` since `p ≥ 1/2`) and the per-cell counts an exact
//! binomial. There is no local guarantee: one client's messages reveal its item (a cell with
//! two messages), so the protection rests entirely on the shuffler.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rand_distr::Distribution;
use tally_accounting::balcer_cheu::BalcerCheu;
use tally_accounting::{Collusion, ErrorLaw, Guarantee, TrustModel};

use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, MessageCost, check_map};
use crate::ldp::check_domain;
use crate::protocol::wire::{BoundedDomainQuery, decimal_digits_below};
use crate::protocol::{
    CountedRound, DeviceQuery, DomainRound, Estimates, MultiMessage, RoundAggregator,
    RoundProtocol, WireReport, decode_messages, encode_messages,
};
use crate::sampling::{ExactBinomial, PoissonSampler};

/// The Balcer–Cheu histogram over the domain `0..d` for a fixed number of clients `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheuHistogram {
    domain: u32,
    params: BalcerCheu,
    /// A client's absent noise messages: rate `1 − p` over the domain.
    absent: PoissonSampler,
    /// One cell's noise messages over all clients: `Bin(n, p)`.
    noise: ExactBinomial,
}

impl BalcerCheuHistogram {
    /// The protocol for `n_users` clients over a domain of `domain = d ≥ 2` items, at the
    /// replace-one shuffle-model target `(epsilon, delta)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `d < 2`; [`Error::Accounting`] if neither analysis
    /// calibrates `p ≥ 1/2` for `(epsilon, delta, n_users)` (see [`BalcerCheu::histogram`]).
    pub fn new(domain: u32, epsilon: f64, delta: f64, n_users: u64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let params = BalcerCheu::histogram(epsilon, delta, n_users)?;
        let p = params.noise_probability();
        Ok(Self {
            domain,
            // p ∈ [1/2, 1): 1 − p is exact (Sterbenz).
            absent: PoissonSampler::new(1.0 - p)?,
            noise: ExactBinomial::new(n_users, p)?,
            params,
        })
    }

    /// The calibration: target, number of clients and noise probability.
    pub fn params(&self) -> &BalcerCheu {
        &self.params
    }

    /// The noise probability `p` of every cell.
    pub fn noise_probability(&self) -> f64 {
        self.params.noise_probability()
    }

    /// The number of clients `n` the protocol is calibrated for.
    pub fn users(&self) -> u64 {
        self.params.users()
    }

    /// One client's messages for `item`, in increasing order (`item` appears twice when its
    /// own noise coin succeeds). This is the randomizer as a client runs it; the run paths
    /// below compute the same counts without materializing the messages.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> Vec<u32> {
        assert!(item < self.domain, "item outside the domain");
        messages_of(item, self.domain, &self.absent, rng).into_messages()
    }

    /// The protocol as a round over `map`'s domain: devices send their messages, the
    /// analyzer counts them and releases every element's estimate
    /// (the rule above).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the protocol's.
    pub fn round(&self, map: DomainMap) -> Result<BalcerCheuRound, Error> {
        check_map(self.domain, map)?;
        Ok(BalcerCheuRound {
            query: BalcerCheuQuery {
                map,
                absent: self.absent,
            },
            protocol: self.clone(),
        })
    }

    /// Draws the shuffler's output cell by cell when `holders[j]` clients hold element `j`:
    /// `holders[j] + Bin(n, p)` messages equal to `j`, independently across cells, the law
    /// of every client's messages summed.
    ///
    /// # Panics
    ///
    /// If `holders` does not have one entry per domain element or does not sum to the
    /// calibrated `n`.
    pub fn run_per_cell<R: Rng + ?Sized>(&self, holders: &[u64], rng: &mut R) -> Vec<u64> {
        assert_eq!(
            holders.len(),
            self.domain as usize,
            "one count per domain element"
        );
        assert_eq!(
            holders.iter().sum::<u64>(),
            self.users(),
            "the protocol is calibrated for a different number of clients"
        );
        holders
            .iter()
            .map(|&held| held + self.noise.sample(rng))
            .collect()
    }

    /// The paper's analyzer on the per-cell message counts: the frequency estimate
    /// `c* − p` where `c* = count/n > 1`, else 0.
    ///
    /// # Panics
    ///
    /// If `message_counts` does not have one entry per domain element.
    pub fn analyze(&self, message_counts: &[u64]) -> Vec<f64> {
        assert_eq!(
            message_counts.len(),
            self.domain as usize,
            "one message count per domain element"
        );
        let n = self.users();
        let p = self.noise_probability();
        message_counts
            .iter()
            .map(|&count| {
                if count > n {
                    count as f64 / n as f64 - p
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl DomainHistogram for BalcerCheuHistogram {
    fn name(&self) -> &'static str {
        "balcer-cheu"
    }

    fn domain(&self) -> u32 {
        self.domain
    }

    fn guarantee(&self) -> Guarantee {
        self.params.guarantee()
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, Error> {
        Ok(Some(self.params.collusion(colluding_fraction)?))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0 + f64::from(self.domain) * self.noise_probability(),
            bits_per_message: u64::from(u32::BITS - (self.domain - 1).leading_zeros()),
        })
    }

    /// The paper's analyzer on `count + Bin(n, p)` messages, `n` the calibrated number of
    /// clients (whatever `clients` says: the analyzer subtracts `n·p`).
    fn error_law(&self, _: u64, count: u64) -> Option<ErrorLaw> {
        Some(ErrorLaw::ThresholdedBinomial {
            count,
            clients: self.users(),
            p: self.noise_probability(),
        })
    }
}

/// One device's Balcer–Cheu messages: every cell of `0..end` outside its `gaps` once, and its
/// `extra` cell once more. Held by the cells it does not cover (a device's messages cover all
/// but about `d(1 − p)` cells, most often all of them: then nothing is allocated); on the wire,
/// the sorted list of messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalcerCheuMessages {
    /// One past the largest message.
    end: u32,
    /// Non-empty ranges `[start, stop)` of cells without a message, below `end - 1`, in
    /// increasing order, each separated from the next by at least one cell with a message.
    gaps: Vec<(u32, u32)>,
    /// A cell with a message sent twice.
    extra: Option<u32>,
}

/// The messages of a device holding `item`: every cell of `0..domain` whose noise coin
/// succeeds (the absent ones drawn by `absent`), and `item`.
fn messages_of<R: Rng + ?Sized>(
    item: u32,
    domain: u32,
    absent: &PoissonSampler,
    rng: &mut R,
) -> BalcerCheuMessages {
    let mut gaps: Vec<(u32, u32)> = Vec::new();
    let mut extra = Some(item);
    for cell in absent.indices(u64::from(domain), rng) {
        // Unwrap safety: the indices are below the domain, a u32.
        let cell = u32::try_from(cell).expect("a cell of the domain");
        if cell == item {
            // The item's own message stands in for its missing noise message.
            extra = None;
            continue;
        }
        match gaps.last_mut() {
            Some(gap) if gap.1 == cell => gap.1 = cell + 1,
            _ => gaps.push((cell, cell + 1)),
        }
    }
    // A gap at the top of the domain lowers the end instead.
    let end = match gaps.last() {
        Some(&(start, stop)) if stop == domain => {
            gaps.pop();
            start
        }
        _ => domain,
    };
    BalcerCheuMessages { end, gaps, extra }
}

impl MultiMessage for BalcerCheuMessages {
    type Message = u32;

    /// In increasing order.
    fn into_messages(self) -> Vec<u32> {
        let mut messages = Vec::new();
        let mut gaps = self.gaps.iter().peekable();
        let mut cell = 0;
        while cell < self.end {
            if let Some(&(_, stop)) = gaps.next_if(|gap| gap.0 == cell) {
                cell = stop;
                continue;
            }
            messages.push(cell);
            if self.extra == Some(cell) {
                messages.push(cell);
            }
            cell += 1;
        }
        messages
    }

    fn from_message(message: u32) -> Self {
        Self {
            end: message + 1,
            gaps: if message == 0 {
                Vec::new()
            } else {
                vec![(0, message)]
            },
            extra: None,
        }
    }
}

impl WireReport for BalcerCheuMessages {
    /// The messages in increasing order ([`encode_messages`]).
    fn encode(self) -> String {
        encode_messages(self.into_messages())
    }

    /// Refuses a list that is not sorted, repeats a cell more than twice or repeats two
    /// cells, or holds `u32::MAX`.
    fn decode(text: String) -> Option<Self> {
        let mut gaps: Vec<(u32, u32)> = Vec::new();
        let mut extra = None;
        // One past the last message read.
        let mut end = 0_u32;
        let mut read_any = false;
        for message in decode_messages(&text)? {
            let next = message.checked_add(1)?;
            if read_any && next == end {
                if extra.replace(message).is_some() {
                    return None;
                }
                continue;
            }
            if message > end {
                gaps.push((end, message));
            }
            end = next;
            read_any = true;
        }
        Some(Self { end, gaps, extra })
    }
}

/// The query of a Balcer–Cheu round: the public domain and every noise coin's probability.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheuQuery {
    map: DomainMap,
    /// A device's absent noise messages: rate `1 − p` over the domain.
    absent: PoissonSampler,
}

impl BalcerCheuQuery {
    /// The query over `map`'s domain with noise probability `noise_probability = p`, as a
    /// device rebuilds it from what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p ∈ [1/2, 1)` and the domain has at least 2
    /// elements.
    pub fn new(map: DomainMap, noise_probability: f64) -> Result<Self, Error> {
        check_domain(map.size())?;
        if !(0.5..1.0).contains(&noise_probability) {
            return Err(Error::invalid(
                "noise probability",
                noise_probability,
                "in [1/2, 1)",
            ));
        }
        Ok(Self {
            map,
            // p ∈ [1/2, 1): 1 − p is exact (Sterbenz).
            absent: PoissonSampler::new(1.0 - noise_probability)?,
        })
    }

    /// The public domain.
    pub fn map(&self) -> DomainMap {
        self.map
    }

    /// The probability `p` of each noise message.
    pub fn noise_probability(&self) -> f64 {
        1.0 - self.absent.sampling_rate()
    }
}

impl DeviceQuery for BalcerCheuQuery {
    type Input = u32;
    type Report = BalcerCheuMessages;

    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    /// The device's messages; `None` outside the domain.
    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<BalcerCheuMessages> {
        (*item < self.map.size()).then(|| messages_of(*item, self.map.size(), &self.absent, rng))
    }

    /// Messages in the domain: at most one per element plus one more, so at most `d + 1`.
    fn admits(&self, report: &BalcerCheuMessages) -> bool {
        report.end <= self.map.size()
    }
}

/// Every element once and the largest twice, with a comma between messages: the longest
/// list, whatever the element and the coins.
impl BoundedDomainQuery for BalcerCheuQuery {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    fn longest_report(&self) -> u64 {
        let domain = self.map.size();
        let largest = (domain - 1).encode().len() as u64;
        decimal_digits_below(u64::from(domain)) + largest + u64::from(domain)
    }
}

/// The Balcer–Cheu protocol as a round: its query and the calibrated analyzer.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheuRound {
    query: BalcerCheuQuery,
    protocol: BalcerCheuHistogram,
}

impl BalcerCheuRound {
    /// The calibrated protocol.
    pub fn protocol(&self) -> &BalcerCheuHistogram {
        &self.protocol
    }
}

/// Its devices hold a domain element; its release is every element's estimate.
impl DomainRound for BalcerCheuRound {
    fn estimates(Estimates(estimates): Estimates) -> Vec<f64> {
        estimates
    }
}

impl CountedRound for BalcerCheuRound {
    /// When the calibrated `n` devices answer: the analyzer's counts drawn cell by cell
    /// ([`BalcerCheuHistogram::run_per_cell`]: `#{devices holding j} + Bin(n, p)` messages
    /// equal to `j`, independently across cells, the law of the devices' messages summed).
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<BalcerCheuCounts> {
        if counts.iter().sum::<u64>() != self.protocol.users() {
            return None;
        }
        let counts = self.protocol.run_per_cell(counts, rng);
        let mut steps = vec![0_i64; counts.len() + 1];
        let mut previous = 0_i64;
        for (step, &count) in steps.iter_mut().zip(&counts) {
            // Unwrap safety: a count is at most n + n, far below 2^63.
            let count = i64::try_from(count).expect("a message count fits in i64");
            *step = count - previous;
            previous = count;
        }
        steps[counts.len()] = -previous;
        Some(BalcerCheuCounts {
            steps,
            protocol: self.protocol.clone(),
        })
    }
}

impl RoundProtocol for BalcerCheuRound {
    type Query = BalcerCheuQuery;
    type Release = Estimates;
    type Aggregator = BalcerCheuCounts;

    fn query(&self) -> &BalcerCheuQuery {
        &self.query
    }

    /// The analyzer flips no coins.
    fn aggregator(&self, _: ChaCha20Rng) -> BalcerCheuCounts {
        BalcerCheuCounts {
            steps: vec![0; self.protocol.domain as usize + 1],
            protocol: self.protocol.clone(),
        }
    }
}

/// The analyzer of a Balcer–Cheu round: the number of messages equal to each cell, kept as
/// its differences from one cell to the next, so that a run of messages counts in `O(1)`.
pub struct BalcerCheuCounts {
    /// `steps[j] = count(j) − count(j − 1)`; one more entry for the ends of ranges.
    steps: Vec<i64>,
    protocol: BalcerCheuHistogram,
}

impl BalcerCheuCounts {
    /// One message for every cell of `start..end`.
    fn add(&mut self, start: u32, end: u32) {
        self.steps[start as usize] += 1;
        self.steps[end as usize] -= 1;
    }

    /// One message fewer for every cell of `start..end`.
    fn remove(&mut self, start: u32, end: u32) {
        self.steps[start as usize] -= 1;
        self.steps[end as usize] += 1;
    }
}

impl RoundAggregator for BalcerCheuCounts {
    type Report = BalcerCheuMessages;
    type Release = Estimates;

    /// Counts every message of an admitted report.
    ///
    /// # Panics
    ///
    /// If a message is outside the domain (the query did not admit it).
    fn absorb(&mut self, report: BalcerCheuMessages) {
        self.add(0, report.end);
        for &(start, stop) in &report.gaps {
            self.remove(start, stop);
        }
        if let Some(cell) = report.extra {
            self.add(cell, cell + 1);
        }
    }

    fn merge(&mut self, other: Self) {
        for (step, more) in self.steps.iter_mut().zip(other.steps) {
            *step += more;
        }
    }

    /// The paper's analyzer on the message counts, as counts: `count − n·p` where
    /// `count > n`, else 0, with `n` the calibrated number of clients.
    fn release(self) -> Estimates {
        let mut count = 0_i64;
        let counts: Vec<u64> = self.steps[..self.steps.len() - 1]
            .iter()
            .map(|&step| {
                count += step;
                // Unwrap safety: a count is a number of messages.
                u64::try_from(count).expect("a message count is non-negative")
            })
            .collect();
        let n = self.protocol.users() as f64;
        Estimates(
            self.protocol
                .analyze(&counts)
                .into_iter()
                .map(|f| f * n)
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn protocol() -> BalcerCheuHistogram {
        // p ≈ 0.61 over 8 cells (the exact analysis at ε = 0.25): three cells absent from a
        // report on average.
        let protocol = BalcerCheuHistogram::new(8, 0.25, 1e-6, 2000).unwrap();
        assert!(
            (0.6..0.65).contains(&protocol.noise_probability()),
            "{protocol:?}"
        );
        protocol
    }

    /// The randomizer as the paper writes it: every cell whose coin succeeds, then the item.
    fn reference(protocol: &BalcerCheuHistogram, item: u32, rng: &mut ChaCha20Rng) -> Vec<u32> {
        let d = protocol.domain;
        let absent: Vec<u64> = protocol.absent.indices(u64::from(d), rng).collect();
        let mut messages: Vec<u32> = (0..d)
            .filter(|&j| !absent.contains(&u64::from(j)))
            .collect();
        messages.push(item);
        messages.sort_unstable();
        messages
    }

    /// A device's messages sealed apart count as its report does; an element outside the
    /// domain (8), or not one canonical element, is refused alone.
    #[test]
    fn messages_count_apart_as_in_the_whole_report() {
        let round = protocol().round(DomainMap::Integers(8)).unwrap();
        crate::protocol::wire::assert_messages_count_apart_as_whole(
            &round,
            &[0, 7, 3, 3],
            &["8", "0,1", "01"],
        );
    }

    #[test]
    fn a_report_is_the_papers_messages_and_has_one_spelling() {
        let protocol = protocol();
        let round = protocol.round(DomainMap::Integers(8)).unwrap();
        let (mut ours, mut theirs) = (ChaCha20Rng::seed_from_u64(5), ChaCha20Rng::seed_from_u64(5));
        let mut shapes = std::collections::HashSet::new();
        for i in 0..4000_u32 {
            let item = i % 8;
            let report = DeviceQuery::respond(round.query(), &item, &mut ours).unwrap();
            assert!(round.query().admits(&report));
            let messages = report.clone().into_messages();
            assert_eq!(
                messages,
                reference(&protocol, item, &mut theirs),
                "{report:?}"
            );
            shapes.insert((report.gaps.len(), report.end == 8, report.extra.is_some()));
            let text = report.clone().encode();
            assert_eq!(text, encode_messages(messages));
            assert_eq!(BalcerCheuMessages::decode(text), Some(report));
        }
        // Reports with and without gaps, a lowered end and the item's extra message.
        assert!(shapes.len() >= 8, "{shapes:?}");
        for bad in ["", "0,0,0", "0,0,1,1", "1,0", "4294967295", "0,,1", "0,01"] {
            assert_eq!(BalcerCheuMessages::decode(bad.to_owned()), None, "{bad:?}");
        }
        let outside = BalcerCheuMessages::decode("0,1,8".to_owned()).unwrap();
        assert!(!round.query().admits(&outside));
        assert_eq!(DeviceQuery::respond(round.query(), &8, &mut ours), None);
    }

    /// The analyzer counts a report as the messages it splits into, one at a time, and
    /// releases the paper's estimate of those counts; shards merge.
    #[test]
    fn the_analyzer_counts_messages_and_applies_the_papers_rule() {
        let protocol = protocol();
        let round = protocol.round(DomainMap::Integers(8)).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let coins = || ChaCha20Rng::seed_from_u64(0);
        let (mut whole, mut left, mut right) = (
            round.aggregator(coins()),
            round.aggregator(coins()),
            round.aggregator(coins()),
        );
        let mut counts = vec![0_u64; 8];
        for i in 0..2000_u32 {
            let item = if i % 2 == 0 { 0 } else { i % 8 };
            let report = DeviceQuery::respond(round.query(), &item, &mut rng).unwrap();
            for message in report.clone().into_messages() {
                counts[message as usize] += 1;
                right.absorb(BalcerCheuMessages::from_message(message));
            }
            whole.absorb(report);
        }
        left.merge(right);
        let n = protocol.users() as f64;
        let expected: Vec<f64> = protocol.analyze(&counts).iter().map(|f| f * n).collect();
        assert_eq!(whole.release().0, expected);
        assert_eq!(left.release().0, expected);
        // Item 0, held by half the devices, stands out; the others are released as 0.
        assert!(expected[0] > 800.0, "{expected:?}");
        assert!(expected[1..].iter().all(|&e| e == 0.0), "{expected:?}");
    }

    #[test]
    fn a_device_rebuilds_the_query_from_its_noise_probability() {
        let round = protocol().round(DomainMap::Integers(8)).unwrap();
        let query = round.query();
        let rebuilt = BalcerCheuQuery::new(query.map(), query.noise_probability()).unwrap();
        assert_eq!(&rebuilt, query);
        for bad in [0.4, 1.0, f64::NAN] {
            assert!(BalcerCheuQuery::new(query.map(), bad).is_err(), "{bad}");
        }
        let responder: &dyn crate::protocol::wire::DeviceResponder = query;
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        // 0,1,…,7,7: 9 messages of one digit and 8 commas.
        assert_eq!(query.longest_report(), 17);
        // 0,1,…,9,10,10: ten one-digit and two two-digit messages, 11 commas.
        let eleven = BalcerCheuQuery::new(DomainMap::Integers(11), query.noise_probability());
        assert_eq!(eleven.unwrap().longest_report(), 10 + 2 * 2 + 11);
        let text = responder.respond("3", 17, &mut rng).unwrap();
        assert!(BalcerCheuMessages::decode(text).is_some_and(|r| query.admits(&r)));
        // Too long at worst: abstains, without flipping a coin.
        let mut unused = ChaCha20Rng::seed_from_u64(7);
        assert_eq!(responder.respond("3", 16, &mut unused), None);
        assert_eq!(unused, ChaCha20Rng::seed_from_u64(7));
        assert_eq!(responder.respond("x", 64, &mut rng), None);
        assert!(protocol().round(DomainMap::Integers(9)).is_err());
    }
}
