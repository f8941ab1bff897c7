//! OptPrefixTree on the wire: the task's options ([`OptPrefixTreeOptions`], the offline
//! command's), the public encoding of words ([`WordEncoding`]), and how an iteration's query is
//! published as an [`Ask::OptPrefixTree`] and rebuilt by a device.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tally_accounting::composition::Composition;
use tally_core::heavy_hitters::{
    Encoding, HuffmanCode, IterationQuery, PublishedIteration, SegmentPolicy, Selection,
};
use tally_core::ldp::UnaryVariant;
use tally_core::protocol::wire::DeviceResponder;

use crate::named;
use crate::rounds::{AskError, PublishedQuery};
use crate::{Ask, ErrorCode};

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
    pub selection: Selection,
    /// OUE or SUE.
    #[serde(default)]
    pub randomizer: Randomizer,
    /// How words become symbols (a Huffman code travels with its table).
    pub encoding: WordEncoding,
    /// How segment lengths are chosen: `max-under-cap`, `max-mass` or `fixed:S`.
    #[serde(with = "named", default = "default_segment")]
    pub segment: SegmentPolicy,
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

fn default_segment() -> SegmentPolicy {
    SegmentPolicy::MaxUnderCap
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

impl From<Randomizer> for UnaryVariant {
    fn from(randomizer: Randomizer) -> Self {
        match randomizer {
            Randomizer::Oue => Self::Optimized,
            Randomizer::Sue => Self::Symmetric,
        }
    }
}

impl From<UnaryVariant> for Randomizer {
    fn from(variant: UnaryVariant) -> Self {
        match variant {
            UnaryVariant::Optimized => Self::Oue,
            UnaryVariant::Symmetric => Self::Sue,
        }
    }
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

impl From<&Encoding> for WordEncoding {
    fn from(encoding: &Encoding) -> Self {
        match encoding {
            Encoding::Bytes => Self::Bytes,
            Encoding::Huffman(code) => Self::Huffman {
                table: code
                    .table()
                    .into_iter()
                    .map(|(symbol, bits)| {
                        let symbol = symbol.map(String::from).unwrap_or_default();
                        let bits = bits
                            .iter()
                            .map(|&b| if b == 1 { '1' } else { '0' })
                            .collect();
                        (symbol, bits)
                    })
                    .collect(),
            },
        }
    }
}

impl TryFrom<&WordEncoding> for Encoding {
    type Error = tally_core::Error;

    /// # Errors
    ///
    /// A table entry that is not one character (or empty) and a string of bits, or a table
    /// that is not a complete prefix-free code ([`HuffmanCode::from_table`]).
    fn try_from(encoding: &WordEncoding) -> Result<Self, tally_core::Error> {
        match encoding {
            WordEncoding::Bytes => Ok(Self::Bytes),
            WordEncoding::Huffman { table } => {
                let entry = |(symbol, bits): &(String, String)| {
                    let mut chars = symbol.chars();
                    let symbol = match (chars.next(), chars.next()) {
                        (None, _) => None,
                        (Some(c), None) => Some(c),
                        (Some(_), Some(_)) => return None,
                    };
                    let bits = bits
                        .bytes()
                        .map(|b| match b {
                            b'0' => Some(0),
                            b'1' => Some(1),
                            _ => None,
                        })
                        .collect::<Option<Vec<u8>>>()?;
                    Some((symbol, bits))
                };
                let table = table
                    .iter()
                    .map(entry)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        invalid("huffman table", "one character and a string of 0 and 1")
                    })?;
                Ok(Self::Huffman(HuffmanCode::from_table(&table)?))
            }
        }
    }
}

/// A published value tally-core would refuse.
fn invalid(name: &'static str, expected: &'static str) -> tally_core::Error {
    tally_core::Error::InvalidParameter {
        name,
        value: "as published".to_owned(),
        expected,
    }
}

/// Symbols in hexadecimal, two digits each.
fn hex(symbols: &[u8]) -> String {
    symbols.iter().map(|s| format!("{s:02x}")).collect()
}

/// The symbols a [`hex`] string spells.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl PublishedQuery for IterationQuery {
    /// A report that is not `|D_t|` bits in the one spelling.
    const REFUSAL: ErrorCode = ErrorCode::Malformed;

    fn ask(&self) -> Ask {
        let published = self.publish();
        Ask::OptPrefixTree {
            run: count(published.run),
            iteration: count(published.iteration),
            parent_length: count(published.parent_length),
            segment: count(published.segment),
            elements: published.elements.iter().map(|e| hex(e)).collect(),
            excluded: published.excluded,
            selection: published.selection,
            randomizer: published.randomizer.into(),
            local_epsilon: published.local_epsilon,
            encoding: (&published.encoding).into(),
        }
    }
}

/// The device's query of an [`Ask::OptPrefixTree`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn responder(
    run: u32,
    iteration: u32,
    parent_length: u32,
    segment: u32,
    elements: &[String],
    excluded: &[String],
    selection: Selection,
    randomizer: Randomizer,
    local_epsilon: f64,
    encoding: &WordEncoding,
) -> Result<Arc<dyn DeviceResponder>, AskError> {
    let elements = elements
        .iter()
        .map(|e| unhex(e))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| invalid("element", "two hexadecimal digits a symbol"))?;
    let query = IterationQuery::from_published(PublishedIteration {
        run: run as usize,
        iteration: iteration as usize,
        parent_length: parent_length as usize,
        segment: segment as usize,
        elements,
        excluded: excluded.to_vec(),
        selection,
        randomizer: randomizer.into(),
        local_epsilon,
        encoding: Encoding::try_from(encoding)?,
    })?;
    Ok(Arc::new(query))
}
