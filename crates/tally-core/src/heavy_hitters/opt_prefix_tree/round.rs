//! One OptPrefixTree iteration as a round of the round protocol: the [`IterationQuery`] is
//! what the server broadcasts, a device [`responds`](DeviceQuery::respond) from its whole
//! multiset of words with its own coins (selection, one-hot, randomized response), the
//! aggregator sums the reports and releases [`IterationSums`].
//!
//! The query travels to devices as a [`PublishedIteration`] (the candidate elements, the words
//! no device may report, the public encoding and the randomizer), from which a device rebuilds
//! the same query ([`IterationQuery::from_published`]).
//!
//! # Privacy
//!
//! A device's report is `ε₀`-LDP for replace-one neighbours (all of its words replaced), as
//! stated in [the module docs](super); every device sends exactly one report of `|D_t|` bits
//! whatever its data. The aggregate guarantee is a shuffle-model one
//! ([`TrustModel::Shuffle`]): it holds when the analyzer sees the reports as a multiset, so
//! an executor runs this round behind a shuffler (the federated server wraps its aggregator in
//! [`crate::protocol::Shuffled`]); the sum it releases is a function of that multiset.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::{Decoded, Encoding, IterationQuery, IterationSums, QueryDomain, Selection};
use crate::Error;
use crate::ldp::{UnaryRandomizer, UnaryReport, UnaryVariant};
use crate::protocol::wire::{DeviceResponder, WireCell, WireRelease};
use crate::protocol::{
    DeviceInput, DeviceQuery, RoundAggregator, RoundProtocol, SingleMessage, TrustModel, WireReport,
};

/// The most slots (live prefixes × `|𝒜|^{s_t}`) a device builds for a published query: far
/// above any domain cap below `2^32` split over a segment, it keeps a query a server could
/// publish from making a device allocate without bound.
const MAX_SLOTS: u64 = 1 << 28;

/// A device's data: its distinct words, each with its multiplicity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordMultiset(Vec<(String, u32)>);

impl WordMultiset {
    /// The multiset of `words` (repeats counted).
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        Self::from_counts(words.into_iter().map(|w| (w.to_owned(), 1)))
    }

    /// The multiset holding each word with the given multiplicity (a word listed twice adds
    /// up; a multiplicity of 0 is no word).
    pub fn from_counts(words: impl IntoIterator<Item = (String, u32)>) -> Self {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut distinct: Vec<(String, u32)> = Vec::new();
        for (word, m) in words.into_iter().filter(|&(_, m)| m > 0) {
            match index.get(&word) {
                Some(&i) => distinct[i].1 = distinct[i].1.saturating_add(m),
                None => {
                    index.insert(word.clone(), distinct.len());
                    distinct.push((word, m));
                }
            }
        }
        Self(distinct)
    }

    /// The multiset as a device's text: one word per line, repeats included (what
    /// [`DeviceInput::read`] reads back).
    pub fn text(&self) -> String {
        let mut text = String::new();
        for (word, m) in &self.0 {
            for _ in 0..*m {
                text.push_str(word);
                text.push('\n');
            }
        }
        text
    }

    /// The distinct words with their multiplicities, in order of first occurrence.
    pub fn words(&self) -> &[(String, u32)] {
        &self.0
    }
}

impl DeviceInput for WordMultiset {
    /// One word per line (repeats counted; empty lines and a trailing `\r` ignored).
    fn read<T>(text: &str, answer: impl FnOnce(&Self) -> T) -> Option<T> {
        let words = text
            .lines()
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .filter(|w| !w.is_empty());
        Some(answer(&Self::from_words(words)))
    }
}

/// A device's report in one iteration: the randomized one-hot vector over `D_t`.
///
/// On the wire it is `k:h`, `k` the number of bits in decimal and `h` the bits in lowercase
/// hexadecimal, four per digit (bit `i` is bit `i mod 4` of digit `i / 4`), the bits past `k`
/// zero: one spelling per report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IterationReport(pub UnaryReport);

/// One device's report is one message to the shuffler.
impl SingleMessage for IterationReport {}

impl WireReport for IterationReport {
    fn encode(self) -> String {
        let len = self.0.len();
        let mut digits = vec![0u8; (len as usize).div_ceil(4)];
        for bit in self.0.ones() {
            digits[(bit / 4) as usize] |= 1 << (bit % 4);
        }
        let hex: String = digits
            .into_iter()
            .map(|d| char::from_digit(u32::from(d), 16).unwrap_or('0'))
            .collect();
        format!("{len}:{hex}")
    }

    fn decode(text: String) -> Option<Self> {
        let (len, hex) = text.split_once(':')?;
        let len = u32::decode(len.to_owned())?;
        if hex.len() != (len as usize).div_ceil(4) {
            return None;
        }
        let digits: Vec<u8> = hex
            .bytes()
            .map(|b| match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'a'..=b'f' => Some(b - b'a' + 10),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let past_end = digits
            .last()
            .is_some_and(|&d| len % 4 != 0 && d >> (len % 4) != 0);
        if past_end {
            return None;
        }
        Some(Self(UnaryReport::from_fn(len, |i| {
            digits[(i / 4) as usize] >> (i % 4) & 1 == 1
        })))
    }
}

/// An iteration's query as it is published to devices: all a device needs to answer it.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishedIteration {
    /// The run, from 1.
    pub run: usize,
    /// The iteration within the run, from 1.
    pub iteration: usize,
    /// `ℓ_{t−1}`.
    pub parent_length: usize,
    /// `s_t`.
    pub segment: usize,
    /// The elements of `D_t` other than `⊥`, in order, as symbol strings of length
    /// `ℓ_{t−1} + s_t`.
    pub elements: Vec<Vec<u8>>,
    /// The words no device reports (denied or already found), sorted.
    pub excluded: Vec<String>,
    /// The devices' selection rule.
    pub selection: Selection,
    /// OUE or SUE.
    pub randomizer: UnaryVariant,
    /// The local `ε₀`.
    pub local_epsilon: f64,
    /// The public encoding of words.
    pub encoding: Encoding,
}

impl IterationQuery {
    /// The query as it is published to devices.
    pub fn publish(&self) -> PublishedIteration {
        let mut excluded: Vec<String> = self.excluded.iter().cloned().collect();
        excluded.sort_unstable();
        PublishedIteration {
            run: self.run,
            iteration: self.iteration,
            parent_length: self.parent_length,
            segment: self.segment,
            elements: self
                .domain
                .elements
                .iter()
                .map(|(symbols, _)| symbols.clone())
                .collect(),
            excluded,
            selection: self.selection,
            randomizer: self.randomizer.variant(),
            local_epsilon: self.randomizer.epsilon(),
            encoding: (*self.encoding).clone(),
        }
    }

    /// The query a device rebuilds from its publication: the same elements in the same order,
    /// and so the same report for the same words and coins.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the segment is 0, an element has the wrong length, a
    /// symbol outside the alphabet or is listed twice, the domain would be too large for a
    /// device to index, or `ε₀` is not a valid local ε.
    pub fn from_published(published: PublishedIteration) -> Result<Self, Error> {
        let bad = |why: &'static str| Error::invalid("published iteration", why, "a valid query");
        let PublishedIteration {
            run,
            iteration,
            parent_length,
            segment,
            elements,
            excluded,
            selection,
            randomizer,
            local_epsilon,
            encoding,
        } = published;
        let alphabet = encoding.alphabet();
        let length = parent_length + segment;
        if segment == 0 {
            return Err(bad("a segment of 0"));
        }
        let width = u32::try_from(segment)
            .ok()
            .and_then(|s| alphabet.checked_pow(s))
            .filter(|&w| w <= MAX_SLOTS)
            .ok_or_else(|| bad("a segment too long"))?;
        let size = u32::try_from(elements.len() + 1).map_err(|_| bad("too many elements"))?;
        let mut parents: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut positions = Vec::with_capacity(elements.len());
        for symbols in &elements {
            if symbols.len() != length || symbols.iter().any(|&s| u64::from(s) >= alphabet) {
                return Err(bad("an element of the wrong length or alphabet"));
            }
            let next = parents.len() as u64;
            let parent = *parents
                .entry(symbols[..parent_length].to_vec())
                .or_insert(next);
            let u = symbols[parent_length..]
                .iter()
                .fold(0u64, |acc, &s| acc * alphabet + u64::from(s));
            positions.push(parent * width + u);
        }
        let slot_count = parents.len() as u64 * width;
        if slot_count > MAX_SLOTS {
            return Err(bad("too many slots"));
        }
        // Unwrap safety: at most MAX_SLOTS slots.
        let mut slots = vec![u32::MAX; usize::try_from(slot_count).expect("slots fit")];
        for (element, &position) in positions.iter().enumerate() {
            let slot = &mut slots[usize::try_from(position).expect("slots fit")];
            if *slot != u32::MAX {
                return Err(bad("an element listed twice"));
            }
            // Unwrap safety: fewer than `size` < 2^32 elements.
            *slot = u32::try_from(element).expect("domain below 2^32");
        }
        let elements = elements
            .into_iter()
            .map(|symbols| {
                let word = match encoding.decode(&symbols) {
                    Decoded::Complete(word) => Some(word),
                    Decoded::Partial | Decoded::Invalid => None,
                };
                (symbols, word)
            })
            .collect();
        Ok(Self {
            run,
            iteration,
            parent_length,
            segment,
            selection,
            randomizer: UnaryRandomizer::new(randomizer, size.max(2), local_epsilon)?,
            domain: Arc::new(QueryDomain {
                parents,
                width,
                slots,
                elements,
            }),
            encoding: Arc::new(encoding),
            excluded: Arc::new(excluded.into_iter().collect::<HashSet<_>>()),
        })
    }

    /// The element a device holding `words` selects with `rng` (`⊥` when none is eligible),
    /// before randomization.
    pub fn select<R: Rng + ?Sized>(&self, words: &WordMultiset, rng: &mut R) -> u32 {
        let eligible: Vec<(u32, u32)> = words
            .words()
            .iter()
            .filter_map(|(word, m)| Some((self.eligible_element(word)?, *m)))
            .collect();
        self.selection
            .choose(&eligible, rng)
            .unwrap_or_else(|| self.bottom())
    }
}

impl DeviceQuery for IterationQuery {
    type Input = WordMultiset;
    type Report = IterationReport;

    /// The aggregate guarantee is amplified by shuffling.
    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    /// Selects one eligible word by the selection rule (or `⊥`) and sends the randomized
    /// one-hot vector of its element: always a report.
    fn respond<R: Rng + ?Sized>(
        &self,
        words: &WordMultiset,
        rng: &mut R,
    ) -> Option<IterationReport> {
        let element = self.select(words, rng);
        Some(IterationReport(self.randomizer.randomize(element, rng)))
    }

    /// A report of exactly `|D_t|` bits.
    fn admits(&self, report: &IterationReport) -> bool {
        report.0.len() == self.domain_size()
    }
}

/// Sums an iteration's reports: all the server learns of them.
pub struct IterationSumsAggregator {
    sums: Vec<u64>,
    reports: u64,
}

impl RoundProtocol for IterationQuery {
    type Query = Self;
    type Release = IterationSums;
    type Aggregator = IterationSumsAggregator;

    fn query(&self) -> &Self {
        self
    }

    /// The sum has no coins of its own.
    fn aggregator(&self, _: ChaCha20Rng) -> IterationSumsAggregator {
        IterationSumsAggregator {
            sums: vec![0; self.domain_size() as usize],
            reports: 0,
        }
    }
}

impl RoundAggregator for IterationSumsAggregator {
    type Report = IterationReport;
    type Release = IterationSums;

    /// Adds an admitted report (of `|D_t|` bits) to the sums.
    fn absorb(&mut self, report: IterationReport) {
        for bit in report.0.ones() {
            self.sums[bit as usize] += 1;
        }
        self.reports += 1;
    }

    fn merge(&mut self, other: Self) {
        for (sum, other) in self.sums.iter_mut().zip(other.sums) {
            *sum += other;
        }
        self.reports += other.reports;
    }

    fn release(self) -> IterationSums {
        IterationSums {
            sums: self.sums,
            reports: self.reports,
        }
    }
}

/// The key of the cell that carries the number of reports.
const REPORTS_CELL: &str = "reports";

impl WireRelease for IterationSums {
    /// A first cell `reports` counting the reports, then one cell per element of `D_t` in
    /// order (`⊥` last), keyed by its index, counting its sum (the estimate is the same sum).
    fn into_cells(self) -> Vec<WireCell> {
        // Unwrap safety: fewer than 2^63 reports.
        let count = |n: u64| i64::try_from(n).expect("a count fits in i64");
        let mut cells = vec![WireCell {
            key: REPORTS_CELL.to_owned(),
            count: count(self.reports),
            estimate: self.reports as f64,
        }];
        cells.extend(self.sums.into_iter().enumerate().map(|(i, sum)| WireCell {
            key: i.to_string(),
            count: count(sum),
            estimate: sum as f64,
        }));
        cells
    }

    /// Refuses cells out of order, a negative count or a sum above the reports.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        let mut cells = cells.into_iter();
        let first = cells.next().ok_or_else(String::new)?;
        let reports = u64::try_from(first.count)
            .ok()
            .filter(|_| first.key == REPORTS_CELL)
            .ok_or(first.key)?;
        let sums = cells
            .enumerate()
            .map(|(i, cell)| {
                u64::try_from(cell.count)
                    .ok()
                    .filter(|&sum| cell.key == i.to_string() && sum <= reports)
                    .ok_or(cell.key)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { sums, reports })
    }
}

impl DeviceResponder for IterationQuery {
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    /// Any text is a multiset of words (one per line).
    fn accepts(&self, _: &str) -> bool {
        true
    }

    /// The report in its wire encoding; `None` when it is longer than `max_bytes` (its
    /// length is the public `|D_t|`'s, so abstaining says nothing of the device's words).
    fn respond(&self, words: &str, max_bytes: usize, mut rng: &mut dyn Rng) -> Option<String> {
        let report =
            WordMultiset::read(words, |words| DeviceQuery::respond(self, words, &mut rng))??
                .encode();
        (report.len() <= max_bytes).then_some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(len: u32, ones: &[u32]) -> IterationReport {
        IterationReport(UnaryReport::from_fn(len, |i| ones.contains(&i)))
    }

    #[test]
    fn a_report_has_one_spelling() {
        for (len, ones, text) in [
            (5, &[0, 4][..], "5:11"),
            (8, &[3, 7], "8:88"),
            (1, &[], "1:0"),
            (6, &[1, 2, 5], "6:62"),
        ] {
            assert_eq!(report(len, ones).encode(), text);
            assert_eq!(
                IterationReport::decode(text.to_owned()),
                Some(report(len, ones))
            );
        }
        for bad in [
            "5:1", "5:111", "5:12", "5:1G", "5:1A", "05:11", "511", ":", "5:01 ",
        ] {
            assert_eq!(IterationReport::decode(bad.to_owned()), None, "{bad:?}");
        }
    }

    #[test]
    fn sums_cross_the_wire_and_corrupt_cells_are_refused() {
        let sums = IterationSums {
            sums: vec![3, 0, 7],
            reports: 7,
        };
        let cells = sums.clone().into_cells();
        assert_eq!(IterationSums::from_cells(cells.clone()), Ok(sums));
        let mut swapped = cells.clone();
        swapped.swap(1, 2);
        assert!(IterationSums::from_cells(swapped).is_err());
        let mut above = cells;
        above[1].count = 8;
        assert!(IterationSums::from_cells(above).is_err());
        assert!(IterationSums::from_cells(Vec::new()).is_err());
    }

    #[test]
    fn a_multiset_reads_back_its_text() {
        let words = WordMultiset::from_counts([("a".into(), 2), ("b".into(), 0), ("a".into(), 1)]);
        assert_eq!(words.words(), [("a".into(), 3)]);
        assert_eq!(words.text(), "a\na\na\n");
        assert_eq!(WordMultiset::read(&words.text(), Clone::clone), Some(words));
    }

    #[test]
    fn a_multiset_counts_repeats_one_word_per_line() {
        let words = WordMultiset::read("to\r\nbe\n\nor\nnot\nto\nbe\n", Clone::clone).unwrap();
        assert_eq!(
            words.words(),
            [
                ("to".into(), 2),
                ("be".into(), 2),
                ("or".into(), 1),
                ("not".into(), 1)
            ]
        );
    }
}
