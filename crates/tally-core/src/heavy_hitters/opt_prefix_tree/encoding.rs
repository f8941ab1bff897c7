//! How OptPrefixTree turns words into strings of symbols (docs/algorithms.md §6.7): UTF-8 bytes
//! with a zero end byte, or a binary Huffman code over characters plus an end symbol `⊣`.
//!
//! Both codes are *prefix-free over words*: no word's code is a proper prefix of another's
//! (a byte code ends at its first zero; a Huffman word code decodes character by character and
//! `⊣` appears only at its end). A word's code shorter than the prefix length asked for is
//! padded with the symbol 0, which keeps padded codes unambiguous, and the server can tell from
//! a prefix alone whether it is a complete word ([`Decoded::Complete`]), the start of words
//! ([`Decoded::Partial`]), or something no word can produce ([`Decoded::Invalid`]: symbols
//! other than the padding after the end).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use crate::Error;

/// What a string of symbols says about the words it could be a padded prefix of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The start of (possibly) many words; no word ended yet.
    Partial,
    /// The complete code of this word, padded.
    Complete(String),
    /// No word's padded code starts with it.
    Invalid,
}

/// A public encoding of words as symbol strings.
#[derive(Clone, Debug, PartialEq)]
pub enum Encoding {
    /// UTF-8 bytes followed by a zero byte (the alphabet is all 256 bytes). Words containing
    /// a zero byte cannot be encoded.
    Bytes,
    /// A binary Huffman code over characters plus an end symbol.
    Huffman(HuffmanCode),
}

impl Encoding {
    /// The name used on the command line and in JSON output.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Bytes => "bytes",
            Self::Huffman(_) => "huffman",
        }
    }

    /// The alphabet size `|𝒜|`: 256 or 2.
    pub fn alphabet(&self) -> u64 {
        match self {
            Self::Bytes => 256,
            Self::Huffman(_) => 2,
        }
    }

    /// The code of `word`, end symbol included, or `None` if the word cannot be encoded (a
    /// zero byte, or a character outside the Huffman code's alphabet).
    pub fn encode(&self, word: &str) -> Option<Vec<u8>> {
        match self {
            Self::Bytes => {
                if word.as_bytes().contains(&0) {
                    return None;
                }
                let mut code = word.as_bytes().to_vec();
                code.push(0);
                Some(code)
            }
            Self::Huffman(code) => code.encode(word),
        }
    }

    /// What the padded prefix `symbols` is.
    pub fn decode(&self, symbols: &[u8]) -> Decoded {
        match self {
            Self::Bytes => match symbols.iter().position(|&b| b == 0) {
                None => Decoded::Partial,
                Some(end) if symbols[end..].iter().all(|&b| b == 0) => {
                    match std::str::from_utf8(&symbols[..end]) {
                        Ok(word) => Decoded::Complete(word.to_owned()),
                        Err(_) => Decoded::Invalid,
                    }
                }
                Some(_) => Decoded::Invalid,
            },
            Self::Huffman(code) => code.decode(symbols),
        }
    }
}

/// The first `length` symbols of `code` padded with zeros: what a device holding the word
/// reports at prefix length `length`.
pub(crate) fn padded_prefix(code: &[u8], length: usize) -> Vec<u8> {
    let mut prefix: Vec<u8> = code.iter().copied().take(length).collect();
    prefix.resize(length, 0);
    prefix
}

/// A symbol of the Huffman code: a character, or the end of the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Symbol {
    Char(char),
    End,
}

/// A node of the decoding tree: a leaf, or the children reached by bits 0 and 1.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Leaf(Symbol),
    Inner([usize; 2]),
}

/// A binary Huffman code over characters plus an end-of-word symbol `⊣` (docs/algorithms.md §6.7).
/// A word's code is its characters' codes followed by the code of `⊣`.
#[derive(Clone, Debug, PartialEq)]
pub struct HuffmanCode {
    codes: HashMap<Symbol, Vec<u8>>,
    /// The decoding tree; node 0 is the root.
    tree: Vec<Node>,
}

/// A weight ordered by `f64::total_cmp`, for the heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Weight(f64);

impl Eq for Weight {}

impl PartialOrd for Weight {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Weight {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl HuffmanCode {
    /// The Huffman code for characters with the given weights and the end symbol with
    /// `end_weight`. Ties are broken deterministically (by character, then by creation
    /// order), so the same weights always give the same code.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if a weight is negative or not finite, or a character is
    /// listed twice.
    pub fn new(chars: &[(char, f64)], end_weight: f64) -> Result<Self, Error> {
        let mut symbols: Vec<(Symbol, f64)> =
            chars.iter().map(|&(c, w)| (Symbol::Char(c), w)).collect();
        symbols.push((Symbol::End, end_weight));
        symbols.sort_by_key(|&(s, _)| s);
        if symbols.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Error::invalid(
                "huffman alphabet",
                "a repeated character",
                "distinct characters",
            ));
        }
        if let Some(&(_, w)) = symbols.iter().find(|(_, w)| !(w.is_finite() && *w >= 0.0)) {
            return Err(Error::invalid("huffman weight", w, "a finite number ≥ 0"));
        }
        let mut tree: Vec<Node> = symbols.iter().map(|&(s, _)| Node::Leaf(s)).collect();
        let mut heap: BinaryHeap<Reverse<(Weight, usize)>> = symbols
            .iter()
            .enumerate()
            .map(|(i, &(_, w))| Reverse((Weight(w), i)))
            .collect();
        let root = if symbols.len() == 1 {
            // A lone end symbol still needs one bit.
            tree.push(Node::Inner([0, 0]));
            tree.len() - 1
        } else {
            while heap.len() > 1 {
                // Unwrap safety: the heap holds at least two nodes.
                let Reverse((Weight(a), left)) = heap.pop().expect("two nodes");
                let Reverse((Weight(b), right)) = heap.pop().expect("two nodes");
                tree.push(Node::Inner([left, right]));
                heap.push(Reverse((Weight(a + b), tree.len() - 1)));
            }
            tree.len() - 1
        };
        // Renumber so that the root is node 0, assigning codes on the way.
        let mut codes = HashMap::new();
        let mut ordered = Vec::with_capacity(tree.len());
        let mut stack = vec![(root, Vec::new(), None::<(usize, usize)>)];
        while let Some((node, code, parent)) = stack.pop() {
            let index = ordered.len();
            if let Some((p, bit)) = parent
                && let Node::Inner(children) = &mut ordered[p]
            {
                children[bit] = index;
            }
            match &tree[node] {
                Node::Leaf(symbol) => {
                    codes.insert(*symbol, code);
                    ordered.push(tree[node].clone());
                }
                Node::Inner([left, right]) => {
                    ordered.push(Node::Inner([usize::MAX; 2]));
                    for (bit, child) in [(1u8, *right), (0u8, *left)] {
                        let mut child_code = code.clone();
                        child_code.push(bit);
                        stack.push((child, child_code, Some((index, usize::from(bit)))));
                    }
                }
            }
        }
        Ok(Self {
            codes,
            tree: ordered,
        })
    }

    /// The code for the characters of weighted words: each character weighted by how often it
    /// occurs in the words (times the word's weight), and `⊣` by the words' total weight.
    ///
    /// # Errors
    ///
    /// As [`HuffmanCode::new`].
    pub fn from_words<'a>(words: impl IntoIterator<Item = (&'a str, f64)>) -> Result<Self, Error> {
        let mut weights: HashMap<char, f64> = HashMap::new();
        let mut end = 0.0;
        for (word, weight) in words {
            for c in word.chars() {
                *weights.entry(c).or_default() += weight;
            }
            end += weight;
        }
        let chars: Vec<(char, f64)> = weights.into_iter().collect();
        Self::new(&chars, end)
    }

    /// The code of character `c`, if it is in the alphabet.
    pub fn char_code(&self, c: char) -> Option<&[u8]> {
        self.codes.get(&Symbol::Char(c)).map(Vec::as_slice)
    }

    /// The code of the end symbol `⊣`.
    pub fn end_code(&self) -> &[u8] {
        &self.codes[&Symbol::End]
    }

    /// The code of `word` followed by the end code, or `None` if it has a character outside
    /// the alphabet.
    pub fn encode(&self, word: &str) -> Option<Vec<u8>> {
        let mut code = Vec::new();
        for c in word.chars() {
            code.extend_from_slice(self.char_code(c)?);
        }
        code.extend_from_slice(self.end_code());
        Some(code)
    }

    /// The code as a table, as it is published to devices: every character's code and the
    /// end symbol's (`None`), in the order of the symbols.
    pub fn table(&self) -> Vec<(Option<char>, Vec<u8>)> {
        let mut table: Vec<(Symbol, &Vec<u8>)> = self.codes.iter().map(|(&s, c)| (s, c)).collect();
        table.sort_unstable();
        table
            .into_iter()
            .map(|(symbol, code)| {
                let symbol = match symbol {
                    Symbol::Char(c) => Some(c),
                    Symbol::End => None,
                };
                (symbol, code.clone())
            })
            .collect()
    }

    /// The code a [`HuffmanCode::table`] spells.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the table lists every symbol once, the end symbol
    /// included, with non-empty codes of bits that are prefix-free and complete (every string
    /// of bits starts with some code, as a Huffman code's do).
    pub fn from_table(table: &[(Option<char>, Vec<u8>)]) -> Result<Self, Error> {
        let bad =
            |why: &'static str| Error::invalid("huffman table", why, "a complete prefix-free code");
        let mut codes = HashMap::with_capacity(table.len());
        let mut tree = vec![Node::Inner([usize::MAX; 2])];
        for (symbol, code) in table {
            let symbol = symbol.map_or(Symbol::End, Symbol::Char);
            if code.is_empty() || code.iter().any(|&b| b > 1) {
                return Err(bad("a code that is not a string of bits"));
            }
            let mut node = 0;
            for &bit in code {
                let Node::Inner(children) = tree[node] else {
                    return Err(bad("a code extending another"));
                };
                node = if children[usize::from(bit)] == usize::MAX {
                    tree.push(Node::Inner([usize::MAX; 2]));
                    let child = tree.len() - 1;
                    if let Node::Inner(children) = &mut tree[node] {
                        children[usize::from(bit)] = child;
                    }
                    child
                } else {
                    children[usize::from(bit)]
                };
            }
            if tree[node] != Node::Inner([usize::MAX; 2]) {
                return Err(bad("a code that is a prefix of another"));
            }
            tree[node] = Node::Leaf(symbol);
            if codes.insert(symbol, code.clone()).is_some() {
                return Err(bad("a symbol listed twice"));
            }
        }
        let complete = tree
            .iter()
            .all(|node| !matches!(node, Node::Inner(children) if children.contains(&usize::MAX)));
        if !complete || !codes.contains_key(&Symbol::End) {
            return Err(bad("an incomplete code or no end symbol"));
        }
        Ok(Self { codes, tree })
    }

    /// What the padded prefix `bits` is.
    pub fn decode(&self, bits: &[u8]) -> Decoded {
        let mut word = String::new();
        let mut node = 0;
        for (i, &bit) in bits.iter().enumerate() {
            let Node::Inner(children) = &self.tree[node] else {
                unreachable!("the walk restarts at the root after every leaf")
            };
            node = children[usize::from(bit & 1)];
            if let Node::Leaf(symbol) = self.tree[node] {
                match symbol {
                    Symbol::Char(c) => word.push(c),
                    Symbol::End => {
                        return if bits[i + 1..].iter().all(|&b| b == 0) {
                            Decoded::Complete(word)
                        } else {
                            Decoded::Invalid
                        };
                    }
                }
                node = 0;
            }
        }
        Decoded::Partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_padding() {
        let e = Encoding::Bytes;
        let code = e.encode("ab").unwrap();
        assert_eq!(code, b"ab\0");
        assert_eq!(
            e.decode(&padded_prefix(&code, 5)),
            Decoded::Complete("ab".into())
        );
        assert_eq!(e.decode(b"a"), Decoded::Partial);
        assert_eq!(e.decode(b"a\0b"), Decoded::Invalid);
        assert_eq!(e.encode("a\0"), None);
    }

    #[test]
    fn huffman_round_trip() {
        let code = HuffmanCode::from_words([("the", 5.0), ("a", 3.0), ("tea", 1.0)]).unwrap();
        for word in ["the", "a", "tea", "eat", ""] {
            let bits = code.encode(word).unwrap();
            assert_eq!(code.decode(&bits), Decoded::Complete(word.into()));
            assert_eq!(
                code.decode(&padded_prefix(&bits, bits.len() + 3)),
                Decoded::Complete(word.into())
            );
            assert_eq!(code.decode(&bits[..bits.len() - 1]), Decoded::Partial);
        }
        assert_eq!(code.encode("x"), None);
    }

    #[test]
    fn a_huffman_table_spells_the_same_code() {
        let code = HuffmanCode::from_words([("the", 5.0), ("a", 3.0), ("tea", 1.0)]).unwrap();
        let table = code.table();
        assert_eq!(table.last().map(|(s, _)| *s), Some(None));
        let rebuilt = HuffmanCode::from_table(&table).unwrap();
        assert_eq!(rebuilt.table(), table);
        for word in ["the", "a", "tea", "eat", ""] {
            let bits = rebuilt.encode(word).unwrap();
            assert_eq!(Some(&bits), code.encode(word).as_ref());
            assert_eq!(rebuilt.decode(&bits), Decoded::Complete(word.into()));
        }
        let mut missing = table.clone();
        missing.pop();
        assert!(HuffmanCode::from_table(&missing).is_err());
        let mut twice = table.clone();
        twice.push(table[0].clone());
        assert!(HuffmanCode::from_table(&twice).is_err());
        let mut extended = table;
        extended[0].1.push(0);
        assert!(HuffmanCode::from_table(&extended).is_err());
    }
}
