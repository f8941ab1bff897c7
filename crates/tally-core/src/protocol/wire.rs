//! The object-safe layer over the round traits, for executors that hold rounds of many kinds
//! side by side and reports as text: the federated server and its devices.
//!
//! Every report is decoded once, at the boundary, into the round's typed report
//! ([`WireReport::decode`]) and checked by [`DeviceQuery::admits`]; one that does neither is
//! refused ([`NotAdmitted`]), never dropped. A release leaves as [`WireCell`]s, its cells
//! written in the same encoding ([`WireRelease`]), and a task reads them back with
//! [`WireRelease::from_cells`], which refuses any cell that is not the one spelling of a report.

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use crate::histogram::DomainMap;
use crate::sampling::exact_binomial;

use super::{
    CoinHolder, DeviceInput, DeviceQuery, MultiMessage, ReportFeature, RoundAggregator,
    RoundProtocol, SampleThresholdAsk, ThresholdCell, TrustModel, WireReport,
};

/// A released cell with its report in its wire encoding: what a server stores and hands to
/// its task. The count is signed, for releases that add noise to it; a sample-and-threshold
/// cell's is never negative.
#[derive(Clone, Debug, PartialEq)]
pub struct WireCell {
    /// The cell's report, in its wire encoding.
    pub key: String,
    /// Its released count.
    pub count: i64,
    /// Its released estimate.
    pub estimate: f64,
}

/// One cell per domain element `0, 1, …`, in order: the element in its wire encoding, with the
/// count and estimate `cell` makes of its value.
pub(crate) fn element_cells<T>(values: Vec<T>, cell: impl Fn(T) -> (i64, f64)) -> Vec<WireCell> {
    values
        .into_iter()
        .zip(0_u32..)
        .map(|(value, element)| {
            let (count, estimate) = cell(value);
            WireCell {
                key: element.encode(),
                count,
                estimate,
            }
        })
        .collect()
}

/// The values of cells that must be the elements `0, 1, …` in order, each read by `value`
/// (`None` when its count and estimate are not the one spelling of a value); the key of the
/// first cell out of place or misspelt otherwise.
pub(crate) fn element_values<T>(
    cells: Vec<WireCell>,
    value: impl Fn(&WireCell) -> Option<T>,
) -> Result<Vec<T>, String> {
    cells
        .into_iter()
        .zip(0_u32..)
        .map(|(cell, element)| {
            let read = (u32::decode(cell.key.clone()) == Some(element))
                .then(|| value(&cell))
                .flatten();
            read.ok_or(cell.key)
        })
        .collect()
}

/// A round's query made ready to answer for devices whose data is text.
pub trait DeviceResponder: Send + Sync + fmt::Debug {
    /// The party the round's guarantee trusts.
    fn trust(&self) -> TrustModel;

    /// Whether a device holding `data` can answer (e.g. a number for a bucket round).
    fn accepts(&self, data: &str) -> bool;

    /// The device's report for `data` in its wire encoding, or `None` to abstain (including
    /// when `data` cannot answer this round, and when the report would be longer than
    /// `max_bytes`: a refusal as oversized would tell the server that the device was sampled).
    fn respond(&self, data: &str, max_bytes: usize, rng: &mut dyn Rng) -> Option<String>;

    /// The device's report for `data` as its messages, each in its wire encoding, for a
    /// device that seals every message on its own (a split-trust deployment, whose relay
    /// mixes all devices' messages): one for a report of one message, and as
    /// [`DeviceResponder::respond`] otherwise.
    fn respond_messages(
        &self,
        data: &str,
        max_bytes: usize,
        rng: &mut dyn Rng,
    ) -> Option<Vec<String>> {
        self.respond(data, max_bytes, rng)
            .map(|report| vec![report])
    }

    /// Whether a device's report is a function of its data alone (no coin is flipped):
    /// `false` by default.
    fn flips_no_coin(&self) -> bool {
        false
    }

    /// Where a device's one coin is whether it sends, and what it sends is a function of its
    /// data: the probability that it sends. `None` by default (a device that flips no coin,
    /// or flips others). A simulator flips that coin for the device through it, keyed by the
    /// device's id ([`crate::sampling::KeyedCoin`]).
    fn sending_rate(&self) -> Option<f64> {
        None
    }

    /// The report a device holding `data` sends once it sends: what
    /// [`DeviceResponder::respond`] returns when the coin of
    /// [`DeviceResponder::sending_rate`] comes up heads, under the same abstentions. By
    /// default `respond` itself, which is that report for a responder that
    /// [flips no coin](DeviceResponder::flips_no_coin); a responder with a sending rate
    /// overrides it, and no caller asks it of one that flips other coins.
    fn respond_sent(&self, data: &str, max_bytes: usize, rng: &mut dyn Rng) -> Option<String> {
        self.respond(data, max_bytes, rng)
    }

    /// The reports of `holders` devices that all hold `data`, each with how many of them send
    /// it, in the order first sent: in law, what `holders` independent calls of
    /// [`DeviceResponder::respond`] return, grouped. A simulator answers a population given
    /// as its distinct data's counts through it.
    ///
    /// By default one report counted `holders` times when the responder
    /// [flips no coin](DeviceResponder::flips_no_coin), and otherwise `holders` calls of
    /// `respond`; a responder whose report is sent with some probability overrides it with one
    /// exact draw of how many send.
    fn respond_held(
        &self,
        data: &str,
        holders: u64,
        max_bytes: usize,
        rng: &mut dyn Rng,
    ) -> Vec<(String, u64)> {
        if holders == 0 {
            return Vec::new();
        }
        if self.flips_no_coin() {
            return self
                .respond(data, max_bytes, rng)
                .map(|report| (report, holders))
                .into_iter()
                .collect();
        }
        let mut sent: Vec<(String, u64)> = Vec::new();
        let mut index: FxHashMap<String, usize> = FxHashMap::default();
        for _ in 0..holders {
            if let Some(report) = self.respond(data, max_bytes, rng) {
                match index.get(&report) {
                    Some(&at) => sent[at].1 += 1,
                    None => {
                        index.insert(report.clone(), sent.len());
                        sent.push((report, 1));
                    }
                }
            }
        }
        sent
    }
}

impl<F> DeviceResponder for SampleThresholdAsk<F>
where
    F: ReportFeature<Input: DeviceInput, Key: WireReport> + Send + Sync + fmt::Debug,
{
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    fn accepts(&self, data: &str) -> bool {
        F::Input::read(data, |_| ()).is_some()
    }

    /// The cell is encoded and its size checked before the coin is flipped, as the
    /// aggregator checks the size before its own coin.
    fn respond(&self, data: &str, max_bytes: usize, mut rng: &mut dyn Rng) -> Option<String> {
        let report = self.fitting_cell(data, max_bytes)?;
        self.send(report, &mut rng)
    }

    /// A device flips no coin when the aggregator flips them.
    fn flips_no_coin(&self) -> bool {
        self.coins == CoinHolder::Aggregator
    }

    /// `p_s` under device-side coins: the device's one coin is whether it sends its cell.
    fn sending_rate(&self) -> Option<f64> {
        (self.coins == CoinHolder::Device).then(|| self.coin.sampling_rate())
    }

    /// The device's cell, encoded, if it fits `max_bytes`: no coin is flipped.
    fn respond_sent(&self, data: &str, max_bytes: usize, _rng: &mut dyn Rng) -> Option<String> {
        self.fitting_cell(data, max_bytes)
    }

    /// One report: sent by a `Bin(holders, p_s)` number of them, drawn exactly
    /// ([`exact_binomial`]), under device-side coins; by all of them when the aggregator
    /// flips the coins. As in [`DeviceResponder::respond`], the size is checked first.
    fn respond_held(
        &self,
        data: &str,
        holders: u64,
        max_bytes: usize,
        mut rng: &mut dyn Rng,
    ) -> Vec<(String, u64)> {
        let Some(report) = self.fitting_cell(data, max_bytes) else {
            return Vec::new();
        };
        let sent = match self.coins {
            CoinHolder::Device => exact_binomial(holders, self.coin.sampling_rate(), &mut rng),
            CoinHolder::Aggregator => holders,
        };
        (sent > 0).then_some((report, sent)).into_iter().collect()
    }
}

impl<F> SampleThresholdAsk<F>
where
    F: ReportFeature<Input: DeviceInput, Key: WireReport>,
{
    /// The cell of a device holding `data`, encoded, if it has one that fits `max_bytes`.
    fn fitting_cell(&self, data: &str, max_bytes: usize) -> Option<String> {
        let report = F::Input::read(data, |input| self.feature.key(input))??.encode();
        (report.len() <= max_bytes).then_some(report)
    }
}

/// A query whose devices hold an element of a public domain and whose every report is at most
/// [`longest_report`](Self::longest_report) bytes long, a bound known before any coin is
/// flipped. Its devices answer through the blanket [`DeviceResponder`], which abstains when
/// that bound exceeds the round's limit, before flipping a coin: whether a device abstains
/// then depends on neither its element nor its coins (the length of its own report would).
pub trait BoundedDomainQuery:
    DeviceQuery<Input = u32, Report: WireReport + MultiMessage<Message: WireReport>>
    + Send
    + Sync
    + fmt::Debug
{
    /// How a device's data is placed in the domain.
    fn domain_map(&self) -> DomainMap;

    /// The length of the longest report a device could send, in bytes.
    fn longest_report(&self) -> u64;

    /// Whether a device's report is a function of its element alone
    /// ([`DeviceResponder::flips_no_coin`]): `false` by default.
    fn flips_no_coin(&self) -> bool {
        false
    }
}

impl<Q: BoundedDomainQuery> DeviceResponder for Q {
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    fn accepts(&self, data: &str) -> bool {
        self.domain_map().element(data).is_some()
    }

    fn respond(&self, data: &str, max_bytes: usize, rng: &mut dyn Rng) -> Option<String> {
        bounded_report(self, data, max_bytes, rng).map(WireReport::encode)
    }

    /// The report's messages, each encoded on its own, under the same abstentions.
    fn respond_messages(
        &self,
        data: &str,
        max_bytes: usize,
        rng: &mut dyn Rng,
    ) -> Option<Vec<String>> {
        bounded_report(self, data, max_bytes, rng).map(encode_messages_apart)
    }

    fn flips_no_coin(&self) -> bool {
        BoundedDomainQuery::flips_no_coin(self)
    }
}

/// The report of a device holding `data` in a [`BoundedDomainQuery`]'s round, or `None`: not
/// an element of the domain, or the round's longest report would not fit `max_bytes`.
fn bounded_report<Q: BoundedDomainQuery + ?Sized>(
    query: &Q,
    data: &str,
    max_bytes: usize,
    rng: &mut dyn Rng,
) -> Option<Q::Report> {
    let element = query.domain_map().element(data)?;
    if query.longest_report() > max_bytes as u64 {
        return None;
    }
    DeviceQuery::respond(query, &element, rng)
}

/// A report's messages, each in its own wire encoding.
pub(crate) fn encode_messages_apart<T: MultiMessage<Message: WireReport>>(
    report: T,
) -> Vec<String> {
    report
        .into_messages()
        .into_iter()
        .map(WireReport::encode)
        .collect()
}

/// The number of decimal digits of `x`.
pub(crate) fn decimal_digits(x: u64) -> u64 {
    x.checked_ilog10().map_or(1, |log| u64::from(log) + 1)
}

/// The number of decimal digits of `0, 1, …, n − 1` written one after another (`n ≥ 1`).
pub(crate) fn decimal_digits_below(n: u64) -> u64 {
    let mut length = 0;
    let mut start = 1;
    // Numbers of d digits: from 10^(d−1) (0 for d = 1) below 10^d.
    for d in 1..=decimal_digits(n - 1) {
        let end = (start * 10).min(n);
        let from = if d == 1 { 0 } else { start };
        length += (end - from) * d;
        start *= 10;
    }
    length
}

/// An upload that is not the encoding of a report the round admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a report this round admits")]
pub struct NotAdmitted;

/// A round's aggregator taking reports in their wire encoding.
pub trait WireAggregator: Send {
    /// Decodes `report`, checks it and counts it.
    ///
    /// # Errors
    ///
    /// [`NotAdmitted`] if it does not decode to a report the round admits; nothing is counted.
    fn absorb(&mut self, report: String) -> Result<(), NotAdmitted>;

    /// Decodes one message of a report (sealed on its own by its device, and reaching the
    /// aggregator apart from the report's other messages), checks it could be part of a
    /// report the round admits ([`DeviceQuery::admits_message`]) and counts it as the report
    /// of that message alone.
    ///
    /// # Errors
    ///
    /// [`NotAdmitted`] if it does not decode to a message the round admits; nothing is
    /// counted.
    fn absorb_message(&mut self, message: String) -> Result<(), NotAdmitted>;

    /// Decodes `report` and checks it once, and counts it as `times` devices' reports: in
    /// law, what `times` calls of [`WireAggregator::absorb`] count. By default those calls.
    ///
    /// # Errors
    ///
    /// [`NotAdmitted`] if it does not decode to a report the round admits; nothing is counted.
    fn absorb_repeated(&mut self, report: String, times: u64) -> Result<(), NotAdmitted> {
        for _ in 0..times {
            self.absorb(report.clone())?;
        }
        Ok(())
    }

    /// Applies the round's release rule; the cells' reports in their wire encoding.
    fn release(self: Box<Self>) -> Vec<WireCell>;
}

/// A round's release as the server stores it: a list of [`WireCell`]s, read back strictly.
pub trait WireRelease: Sized {
    /// The release as cells, each report in its wire encoding.
    fn into_cells(self) -> Vec<WireCell>;

    /// The release `cells` spell.
    ///
    /// # Errors
    ///
    /// The report of the first cell that is not the one spelling of one of the round's
    /// reports.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String>;
}

impl<K: WireReport> WireRelease for Vec<ThresholdCell<K>> {
    fn into_cells(self) -> Vec<WireCell> {
        self.into_iter()
            .map(|cell| WireCell {
                key: cell.key.encode(),
                // Unwrap safety: a round holds fewer than 2^63 reports.
                count: i64::try_from(cell.count).expect("a count fits in i64"),
                estimate: cell.estimate,
            })
            .collect()
    }

    /// Refuses a negative count too.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        cells
            .into_iter()
            .map(|cell| {
                let count = u64::try_from(cell.count).map_err(|_| cell.key.clone())?;
                let key = K::decode(cell.key.clone()).ok_or(cell.key)?;
                Ok(ThresholdCell {
                    key,
                    count,
                    estimate: cell.estimate,
                })
            })
            .collect()
    }
}

/// A typed round's aggregator behind [`WireAggregator`].
struct Admitting<Q, A> {
    query: Q,
    aggregator: A,
}

impl<Q: DeviceQuery<Report: WireReport>, A> Admitting<Q, A> {
    /// The report `report` spells, if the round admits it.
    fn admitted(&self, report: String) -> Result<Q::Report, NotAdmitted> {
        Q::Report::decode(report)
            .filter(|r| self.query.admits(r))
            .ok_or(NotAdmitted)
    }
}

impl<Q, A> WireAggregator for Admitting<Q, A>
where
    Q: DeviceQuery<Report: WireReport + MultiMessage<Message: WireReport> + Clone> + Send,
    A: RoundAggregator<Report = Q::Report, Release: WireRelease> + Send,
{
    fn absorb(&mut self, report: String) -> Result<(), NotAdmitted> {
        let report = self.admitted(report)?;
        self.aggregator.absorb(report);
        Ok(())
    }

    fn absorb_message(&mut self, message: String) -> Result<(), NotAdmitted> {
        let message = <Q::Report as MultiMessage>::Message::decode(message)
            .filter(|m| self.query.admits_message(m))
            .ok_or(NotAdmitted)?;
        self.aggregator.absorb(Q::Report::from_message(message));
        Ok(())
    }

    fn absorb_repeated(&mut self, report: String, times: u64) -> Result<(), NotAdmitted> {
        let report = self.admitted(report)?;
        self.aggregator.absorb_repeated(report, times);
        Ok(())
    }

    fn release(self: Box<Self>) -> Vec<WireCell> {
        self.aggregator.release().into_cells()
    }
}

/// An empty aggregator of `round` behind [`WireAggregator`], drawing its secret coins from
/// `rng`.
pub fn wire_aggregator<P>(round: &P, rng: ChaCha20Rng) -> Box<dyn WireAggregator>
where
    P: RoundProtocol<
        Query: DeviceQuery<Report: WireReport + MultiMessage<Message: WireReport> + Clone>
                   + Clone
                   + Send
                   + 'static,
    >,
    P::Release: WireRelease,
    P::Aggregator: Send + 'static,
{
    admitting(round.query().clone(), round.aggregator(rng))
}

/// `aggregator`, of a round asking `query`, behind [`WireAggregator`]: what
/// [`wire_aggregator`] returns for an aggregator made otherwise (drawn from the devices'
/// counts by a simulator, [`super::CountedRound::aggregate_counts`]).
pub fn admitting<Q, A>(query: Q, aggregator: A) -> Box<dyn WireAggregator>
where
    Q: DeviceQuery<Report: WireReport + MultiMessage<Message: WireReport> + Clone> + Send + 'static,
    A: RoundAggregator<Report = Q::Report, Release: WireRelease> + Send + 'static,
{
    Box::new(Admitting { query, aggregator })
}

/// Checks that the messages of `round`'s devices, sealed apart and absorbed one by one
/// ([`WireAggregator::absorb_message`]), count exactly what their whole reports count, that
/// each is admitted alone, and that none of `refused` (messages out of the round's range) is.
/// The devices hold `items`, and answer with coins from a stream seeded with `seed`.
#[cfg(test)]
pub(crate) fn assert_messages_count_apart_as_whole<P>(round: &P, items: &[u32], refused: &[&str])
where
    P: RoundProtocol<
        Query: DeviceQuery<
            Input = u32,
            Report: WireReport + MultiMessage<Message: WireReport> + Clone,
        > + Clone
                   + Send
                   + 'static,
    >,
    P::Release: WireRelease,
    P::Aggregator: Send + 'static,
{
    use rand::SeedableRng;

    let mut whole = wire_aggregator(round, ChaCha20Rng::seed_from_u64(1));
    let mut apart = wire_aggregator(round, ChaCha20Rng::seed_from_u64(1));
    let mut devices = ChaCha20Rng::seed_from_u64(2);
    let mut messages = 0;
    for item in items {
        type Report<P> = <<P as RoundProtocol>::Query as DeviceQuery>::Report;
        let text = DeviceQuery::respond(round.query(), item, &mut devices)
            .unwrap()
            .encode();
        whole.absorb(text.clone()).unwrap();
        for message in encode_messages_apart(Report::<P>::decode(text).unwrap()) {
            messages += 1;
            let decoded = Report::<P>::decode(message.clone()).unwrap();
            assert!(round.query().admits_message(&decoded.into_messages()[0]));
            apart.absorb_message(message).unwrap();
        }
    }
    assert!(
        messages > items.len(),
        "one message per device tests nothing here"
    );
    for message in refused {
        assert_eq!(
            apart.absorb_message((*message).to_owned()),
            Err(NotAdmitted)
        );
    }
    assert_eq!(apart.release(), whole.release());
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};

    use super::*;
    use crate::histogram::SampleThreshold;
    use crate::protocol::{BucketOfLevel, CoinHolder, SampleThresholdRound};
    use crate::quantiles::{TreeShape, ValueRange};

    fn bucket_round() -> SampleThresholdRound<BucketOfLevel> {
        let params = SampleThresholdParams::new(0.5, 2).unwrap();
        let mechanism =
            SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let feature = BucketOfLevel {
            shape: TreeShape::new(4, 3).unwrap(),
            level: 1,
            range: Some(ValueRange::new(0.0, 100.0).unwrap()),
        };
        SampleThresholdRound::new(feature, mechanism, CoinHolder::Device)
    }

    /// Devices that flip coins answer `respond_held` as that many calls of `respond` in a row
    /// would, grouped by report in the order first sent; a sample-and-threshold ask draws how
    /// many send, and sends nothing for data it cannot take or a report over `max_bytes`.
    #[test]
    fn held_data_is_answered_as_its_holders_would_answer_in_turn() {
        let grr = crate::protocol::LocalHistogramRound::new(
            DomainMap::Integers(5),
            crate::ldp::Grr::new(5, 0.5).unwrap(),
        )
        .unwrap();
        let responder: &dyn DeviceResponder = grr.query();
        let mut held_rng = ChaCha20Rng::seed_from_u64(7);
        let held = responder.respond_held("3", 1_000, 64, &mut held_rng);
        let mut each_rng = ChaCha20Rng::seed_from_u64(7);
        let mut each: Vec<(String, u64)> = Vec::new();
        for _ in 0..1_000 {
            let report = responder.respond("3", 64, &mut each_rng).unwrap();
            match each.iter_mut().find(|(sent, _)| *sent == report) {
                Some((_, times)) => *times += 1,
                None => each.push((report, 1)),
            }
        }
        assert_eq!(held, each);
        assert_eq!(held.len(), 5);
        assert!(responder.respond_held("3", 0, 64, &mut held_rng).is_empty());

        let round = bucket_round();
        let ask: &dyn DeviceResponder = round.query();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let sent = ask.respond_held("42", 10_000, 64, &mut rng);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, "1");
        assert!((4_500..5_500).contains(&sent[0].1), "{sent:?}");
        assert!(ask.respond_held("apple", 10_000, 64, &mut rng).is_empty());
        assert!(ask.respond_held("42", 10_000, 0, &mut rng).is_empty());
    }

    #[test]
    fn uploads_that_name_no_bucket_are_refused_and_the_rest_counted() {
        let mut aggregator = wire_aggregator(&bucket_round(), ChaCha20Rng::seed_from_u64(0));
        for bad in ["4", "03", "-1", "0.5", "x", ""] {
            assert_eq!(
                aggregator.absorb(bad.to_owned()),
                Err(NotAdmitted),
                "{bad:?}"
            );
        }
        for good in ["3", "3", "0"] {
            aggregator.absorb(good.to_owned()).unwrap();
        }
        let cells = aggregator.release();
        assert_eq!(cells.len(), 1);
        assert_eq!(
            Vec::<ThresholdCell<u32>>::from_cells(cells).unwrap()[0].key,
            3
        );
    }

    #[test]
    fn a_device_answers_in_the_wire_encoding() {
        let round = bucket_round();
        let responder: &dyn DeviceResponder = round.query();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert!(responder.accepts("70"));
        assert!(!responder.accepts("pear"));
        assert_eq!(responder.respond("pear", 8, &mut rng), None);
        let answers: Vec<_> = (0..64)
            .filter_map(|_| responder.respond("70", 8, &mut rng))
            .collect();
        assert!(!answers.is_empty() && answers.len() < 64, "{answers:?}");
        assert!(answers.iter().all(|a| a == "2"));
        // Too long for the round: abstains, without flipping a coin.
        let mut unused = ChaCha20Rng::seed_from_u64(1);
        assert_eq!(responder.respond("70", 0, &mut unused), None);
        assert_eq!(unused, ChaCha20Rng::seed_from_u64(1));
    }

    #[test]
    fn a_cell_spelled_two_ways_is_refused() {
        let cell = |key: &str, count| WireCell {
            key: key.to_owned(),
            count,
            estimate: 2.0,
        };
        assert_eq!(
            Vec::<ThresholdCell<u32>>::from_cells(vec![cell("1", 1), cell("01", 1)]),
            Err("01".to_owned())
        );
        assert_eq!(
            Vec::<ThresholdCell<u32>>::from_cells(vec![cell("1", -1)]),
            Err("1".to_owned())
        );
    }
}
