//! OptPrefixTree on the wire: how the task's options
//! ([`OptPrefixTreeOptions`](tally_messages::OptPrefixTreeOptions)) become tally-core's, how the public encoding of words ([`WordEncoding`]) is read and written, and
//! how an iteration's query is published as an [`Ask::OptPrefixTree`] and rebuilt by a device.

use std::sync::Arc;

use tally_core::heavy_hitters::{
    Encoding, HuffmanCode, IterationQuery, PublishedIteration, SegmentPolicy, Selection,
};
use tally_core::ldp::UnaryVariant;
use tally_core::protocol::wire::DeviceResponder;
use tally_messages::{Ask, ErrorCode, Randomizer, SegmentRule, SelectionRule, WordEncoding};

use crate::rounds::{AskError, PublishedQuery};

/// The unary randomizer a published [`Randomizer`] names.
pub fn unary_variant(randomizer: Randomizer) -> UnaryVariant {
    match randomizer {
        Randomizer::Oue => UnaryVariant::Optimized,
        Randomizer::Sue => UnaryVariant::Symmetric,
    }
}

/// A unary randomizer as published.
pub fn randomizer(variant: UnaryVariant) -> Randomizer {
    match variant {
        UnaryVariant::Optimized => Randomizer::Oue,
        UnaryVariant::Symmetric => Randomizer::Sue,
    }
}

/// The data-selection rule a published [`SelectionRule`] names.
pub fn selection(rule: SelectionRule) -> Selection {
    match rule {
        SelectionRule::UniformSupport => Selection::UniformSupport,
        SelectionRule::Weighted => Selection::Weighted,
    }
}

/// A data-selection rule as published.
pub fn selection_rule(selection: Selection) -> SelectionRule {
    match selection {
        Selection::UniformSupport => SelectionRule::UniformSupport,
        Selection::Weighted => SelectionRule::Weighted,
    }
}

/// The segment policy a published [`SegmentRule`] names.
pub fn segment_policy(rule: SegmentRule) -> SegmentPolicy {
    match rule {
        SegmentRule::Fixed(s) => SegmentPolicy::Fixed(s),
        SegmentRule::MaxUnderCap => SegmentPolicy::MaxUnderCap,
        SegmentRule::MaxMass => SegmentPolicy::MaxMass,
    }
}

/// A segment policy as published.
pub fn segment_rule(policy: SegmentPolicy) -> SegmentRule {
    match policy {
        SegmentPolicy::Fixed(s) => SegmentRule::Fixed(s),
        SegmentPolicy::MaxUnderCap => SegmentRule::MaxUnderCap,
        SegmentPolicy::MaxMass => SegmentRule::MaxMass,
    }
}

/// A public encoding of words as published.
pub fn word_encoding(encoding: &Encoding) -> WordEncoding {
    match encoding {
        Encoding::Bytes => WordEncoding::Bytes,
        Encoding::Huffman(code) => WordEncoding::Huffman {
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

/// The public encoding of words a published [`WordEncoding`] spells.
///
/// # Errors
///
/// A table entry that is not one character (or empty) and a string of bits, or a table that is
/// not a complete prefix-free code ([`HuffmanCode::from_table`]).
pub fn encoding(encoding: &WordEncoding) -> Result<Encoding, tally_core::Error> {
    match encoding {
        WordEncoding::Bytes => Ok(Encoding::Bytes),
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
                .ok_or_else(|| invalid("huffman table", "one character and a string of 0 and 1"))?;
            Ok(Encoding::Huffman(HuffmanCode::from_table(&table)?))
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
            selection: selection_rule(published.selection),
            randomizer: randomizer(published.randomizer),
            local_epsilon: published.local_epsilon,
            encoding: word_encoding(&published.encoding),
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
    selection_rule: SelectionRule,
    randomizer: Randomizer,
    local_epsilon: f64,
    word_encoding: &WordEncoding,
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
        selection: selection(selection_rule),
        randomizer: unary_variant(randomizer),
        local_epsilon,
        encoding: encoding(word_encoding)?,
    })?;
    Ok(Arc::new(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every published rule names one of tally-core's choices and every choice has its
    /// name: the conversions are each other's inverse, and each name reads back as its rule.
    #[test]
    fn published_rules_are_core_choices_each_way() {
        for core in [Selection::UniformSupport, Selection::Weighted] {
            let rule = selection_rule(core);
            assert_eq!(selection(rule), core);
            assert_eq!(rule.to_string().parse::<SelectionRule>(), Ok(rule));
        }
        for core in [
            SegmentPolicy::Fixed(3),
            SegmentPolicy::MaxUnderCap,
            SegmentPolicy::MaxMass,
        ] {
            let rule = segment_rule(core);
            assert_eq!(segment_policy(rule), core);
            assert_eq!(rule.to_string().parse::<SegmentRule>(), Ok(rule));
        }
        for variant in [UnaryVariant::Optimized, UnaryVariant::Symmetric] {
            assert_eq!(unary_variant(randomizer(variant)), variant);
        }
    }
}
