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

impl PrefixRound {
    /// Whether `prefix` is a report some word could give this round: the aggregator's check
    /// before it counts a report. The prefix must be `round·segment` characters long, or
    /// shorter and ending in the terminator (longer than the previous round's prefixes); it may
    /// hold the terminator only at its end; and with live parents set, its first
    /// `(round − 1)·segment` characters must be one of them.
    pub fn admits(&self, prefix: &str) -> bool {
        let parent_length = (self.round - 1) * self.segment;
        let length = prefix.chars().count();
        let terminal = prefix.ends_with(TERMINATOR);
        let body = prefix.strip_suffix(TERMINATOR).unwrap_or(prefix);
        if body.contains(TERMINATOR) || length <= parent_length || length > self.length() {
            return false;
        }
        if !terminal && length != self.length() {
            return false;
        }
        match &self.live_parents {
            Some(live) if self.round > 1 => {
                let parent: String = prefix.chars().take(parent_length).collect();
                live.contains(&parent)
            }
            _ => true,
        }
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
    fn admits_exactly_what_some_word_reports() {
        let words = ["", "a", "ab", "abc", "abcd", "b", "ba", "é", "éa", "aé"];
        let live = Some(&["ab", "é"][..]);
        for (r, segment) in [(1, 1), (2, 1), (3, 1), (2, 2), (3, 2)] {
            for parents in [None, live] {
                let query = round(r, segment, parents);
                let reports: HashSet<String> =
                    words.iter().filter_map(|w| query.report(w)).collect();
                let mut candidates: HashSet<String> = reports.clone();
                for w in words {
                    for cut in 0..=w.chars().count() + 1 {
                        let with_end: String = format!("{w}$").chars().take(cut).collect();
                        candidates.insert(with_end);
                        candidates.insert(w.chars().take(cut).collect());
                    }
                }
                for candidate in candidates {
                    let reportable =
                        reports.contains(&candidate) || words_could_report(&query, &candidate);
                    assert_eq!(
                        query.admits(&candidate),
                        reportable,
                        "round {r}, segment {segment}, {parents:?}: {candidate:?}"
                    );
                }
            }
        }
        assert!(!round(1, 1, None).admits("$$"));
        assert!(!round(2, 1, None).admits("a$b"));
    }

    /// Whether the word the candidate spells (without its terminator) reports it.
    fn words_could_report(query: &PrefixRound, candidate: &str) -> bool {
        let word = candidate.strip_suffix(TERMINATOR).unwrap_or(candidate);
        !word.contains(TERMINATOR)
            && (query.report(word).as_deref() == Some(candidate)
                || (!candidate.ends_with(TERMINATOR)
                    && query.report(&format!("{candidate}x")).as_deref() == Some(candidate)))
    }

    #[test]
    fn counts_characters_not_bytes() {
        assert_eq!(round(2, 1, None).report("éa").as_deref(), Some("éa"));
        assert_eq!(prefix_count("é$"), 2);
    }
}
