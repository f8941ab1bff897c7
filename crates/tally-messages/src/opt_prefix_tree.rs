//! OptPrefixTree on the wire: the task's options ([`OptPrefixTreeOptions`], the offline
//! command's), its devices' data-selection rule and segment policy, and the public encoding of
//! words ([`WordEncoding`]). The registry (`tally-protocol`) publishes an iteration's query as
//! an [`Ask::OptPrefixTree`](crate::Ask::OptPrefixTree) and rebuilds it on a device.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tally_accounting::composition::Composition;

use crate::named;

/// The options of an OptPrefixTree task: those of `tally heavy-hitters --algorithm
/// opt-prefix-tree`, with the same defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptPrefixTreeOptions {
    /// Iterations `T` per run.
    #[serde(default = "default_iterations")]
    pub iterations: u32,
    /// Runs, each denying the words found by the earlier ones (one shared budget).
    #[serde(default = "one")]
    pub runs: u32,
    /// The domain cap `C` (`⊥` included).
    #[serde(default = "default_domain_cap")]
    pub domain_cap: u64,
    /// The target false-positive ratio of the threshold rule.
    #[serde(default = "default_fpr")]
    pub fpr: f64,
    /// The devices' data-selection rule: `uniform-support` or `weighted`.
    #[serde(with = "named", default)]
    pub selection: SelectionRule,
    /// OUE or SUE.
    #[serde(default)]
    pub randomizer: Randomizer,
    /// How words become symbols (a Huffman code travels with its table).
    pub encoding: WordEncoding,
    /// How segment lengths are chosen: `max-under-cap`, `max-mass` or `fixed:S`.
    #[serde(with = "named", default = "default_segment")]
    pub segment: SegmentRule,
    /// The longest prefix, in symbols; 96 for Huffman, 24 for bytes when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    /// Words devices never report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// How the iterations compose; tight when left out.
    #[serde(
        with = "named::optional",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub composition: Option<Composition>,
    /// Amplify by FMT23's bound, whose premise fails for OUE and SUE (as the offline
    /// `--unproven-fmt23`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unproven_fmt23: bool,
}

fn default_iterations() -> u32 {
    5
}

fn one() -> u32 {
    1
}

fn default_domain_cap() -> u64 {
    65_537
}

fn default_fpr() -> f64 {
    0.1
}

fn default_segment() -> SegmentRule {
    SegmentRule::MaxUnderCap
}

/// OptPrefixTree's unary randomizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Randomizer {
    /// Optimized unary encoding.
    #[default]
    Oue,
    /// Symmetric unary encoding.
    Sue,
}

/// A public encoding of words as published.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WordEncoding {
    /// UTF-8 bytes and a zero byte.
    Bytes,
    /// A binary Huffman code by its table: `[symbol, code]` pairs, the symbol one character
    /// (the empty string for the end symbol), the code a string of `0` and `1`.
    Huffman {
        /// The table.
        table: Vec<(String, String)>,
    },
}

/// How an OptPrefixTree device picks the data point it reports (tally-core's `Selection`), by
/// its name on the command line, in a task's spec and in the documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelectionRule {
    /// Uniformly over the distinct eligible data points (the paper's choice).
    #[default]
    UniformSupport,
    /// Proportionally to multiplicity.
    Weighted,
}

impl SelectionRule {
    /// Its name: `uniform-support` or `weighted`.
    pub fn name(self) -> &'static str {
        match self {
            Self::UniformSupport => "uniform-support",
            Self::Weighted => "weighted",
        }
    }
}

impl fmt::Display for SelectionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SelectionRule {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        [Self::UniformSupport, Self::Weighted]
            .into_iter()
            .find(|rule| rule.name() == s)
            .ok_or_else(|| UnknownName::new("selection", s, "uniform-support or weighted"))
    }
}

/// How an OptPrefixTree task chooses each iteration's segment length (tally-core's
/// `SegmentPolicy`), by its name on the command line, in a task's spec and in the documents:
/// `fixed:S`, `max-under-cap` or `max-mass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentRule {
    /// The same `S` symbols every iteration.
    Fixed(usize),
    /// The largest segment whose domain fits under the cap (the default).
    MaxUnderCap,
    /// The segment that maximises the estimated mass advanced.
    MaxMass,
}

impl fmt::Display for SegmentRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(s) => write!(f, "fixed:{s}"),
            Self::MaxUnderCap => f.write_str("max-under-cap"),
            Self::MaxMass => f.write_str("max-mass"),
        }
    }
}

impl FromStr for SegmentRule {
    type Err = UnknownName;

    /// `fixed:S` (S ≥ 1), `max-under-cap` or `max-mass`.
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "max-under-cap" => return Ok(Self::MaxUnderCap),
            "max-mass" => return Ok(Self::MaxMass),
            _ => {}
        }
        s.strip_prefix("fixed:")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n >= 1)
            .map(Self::Fixed)
            .ok_or_else(|| {
                UnknownName::new(
                    "segment policy",
                    s,
                    "fixed:S (S ≥ 1), max-under-cap or max-mass",
                )
            })
    }
}

/// A published name that is not one of its choices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} = {value}: expected {expected}")]
pub struct UnknownName {
    /// What was named.
    pub what: &'static str,
    /// The name given.
    pub value: String,
    /// The names that would do.
    pub expected: &'static str,
}

impl UnknownName {
    fn new(what: &'static str, value: &str, expected: &'static str) -> Self {
        Self {
            what,
            value: value.to_owned(),
            expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(
            "fixed:4".parse::<SegmentRule>().unwrap(),
            SegmentRule::Fixed(4)
        );
        assert_eq!(
            "max-under-cap".parse::<SegmentRule>().unwrap(),
            SegmentRule::MaxUnderCap
        );
        assert!("fixed:0".parse::<SegmentRule>().is_err());
    }
}
