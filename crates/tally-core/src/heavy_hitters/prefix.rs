//! The client side of a prefix-tree round: which prefix of its word a client reports.

use std::collections::HashSet;
use std::sync::Arc;

/// Appended to every word so that a complete word is a prefix of its own: `"the"` becomes
/// `"the$"`, and `"the$"` being released means the word `the` is frequent, while `"the"` only
/// says that some words start with it.
pub const TERMINATOR: char = '$';

/// The query of one prefix-tree round: report the prefix of `word + '$'` that is `length`
/// characters long.
#[derive(Clone, Debug)]
pub struct PrefixRound {
    /// The round, from 1.
    pub round: usize,
    /// Characters per round (the segment length `g`).
    pub segment: usize,
    /// The prefixes of length `(round − 1)·segment` that survived the previous round. When set,
    /// a client reports only if its own shorter prefix is among them (TrieHH's rule and
    /// TrieHH++'s restricted variant); when `None`, every client with a long enough word
    /// reports.
    pub live_parents: Option<Arc<HashSet<String>>>,
}

impl PrefixRound {
    /// The prefix length this round asks for, `round · segment` characters (terminator
    /// included).
    pub fn length(&self) -> usize {
        self.round * self.segment
    }

    /// The client's report for its `word`: the first `round·segment` characters of
    /// `word + '$'` (fewer when the word ends inside this round's segment), or `None` when the
    /// word ended in an earlier round or its parent prefix did not survive.
    pub fn report(&self, word: &str) -> Option<String> {
        let parent_length = (self.round - 1) * self.segment;
        let chars = word.chars().count() + 1;
        if chars <= parent_length {
            return None;
        }
        if let Some(live) = &self.live_parents
            && self.round > 1
        {
            let parent: String = word.chars().take(parent_length).collect();
            if !live.contains(&parent) {
                return None;
            }
        }
        let mut prefix: String = word.chars().take(self.length()).collect();
        if chars <= self.length() {
            prefix.push(TERMINATOR);
        }
        Some(prefix)
    }
}

/// The number of characters of a prefix, terminator included.
pub fn prefix_count(prefix: &str) -> usize {
    prefix.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(round: usize, segment: usize, live: Option<&[&str]>) -> PrefixRound {
        PrefixRound {
            round,
            segment,
            live_parents: live.map(|l| Arc::new(l.iter().map(|s| (*s).to_owned()).collect())),
        }
    }

    #[test]
    fn reports_one_more_character_per_round() {
        assert_eq!(round(1, 1, None).report("abc").as_deref(), Some("a"));
        assert_eq!(round(3, 1, None).report("abc").as_deref(), Some("abc"));
        assert_eq!(round(4, 1, None).report("abc").as_deref(), Some("abc$"));
        assert_eq!(round(5, 1, None).report("abc"), None);
        assert_eq!(round(1, 1, None).report("").as_deref(), Some("$"));
    }

    #[test]
    fn segments_end_early_at_the_terminator() {
        assert_eq!(round(1, 2, None).report("abc").as_deref(), Some("ab"));
        assert_eq!(round(2, 2, None).report("abc").as_deref(), Some("abc$"));
        assert_eq!(round(2, 2, None).report("ab").as_deref(), Some("ab$"));
        assert_eq!(round(3, 2, None).report("ab"), None);
    }

    #[test]
    fn restricted_rounds_need_a_live_parent() {
        let live = Some(&["ab"][..]);
        assert_eq!(round(3, 1, live).report("abc").as_deref(), Some("abc"));
        assert_eq!(round(3, 1, live).report("acb"), None);
        // Round 1 has no parent to check.
        assert_eq!(round(1, 1, Some(&[][..])).report("x").as_deref(), Some("x"));
    }

    #[test]
    fn counts_characters_not_bytes() {
        assert_eq!(round(2, 1, None).report("éa").as_deref(), Some("éa"));
        assert_eq!(prefix_count("é$"), 2);
    }
}
