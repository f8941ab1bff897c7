//! Segment policies (docs/algorithms.md §6.5, RECON): how many symbols the next iteration adds to
//! every live prefix, under the domain cap `C` (the query domain `D_t` has
//! `|P_{t−1}|·|𝒜|^s + 1 ≤ C` elements, `⊥` included). Every policy is a function of the
//! released estimates only (post-processing).

/// How the segment length `s_t` is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentPolicy {
    /// The same `s` every iteration (the baseline). When `|P|·|𝒜|^s + 1 > C`, the prefixes with
    /// the smallest estimates are dropped until the domain fits.
    Fixed(usize),
    /// The largest `s ≥ 1` with `|P|·|𝒜|^s + 1 ≤ C` (the default); when even `s = 1` does not
    /// fit, `s = 1` and the prefixes with the smallest estimates are dropped.
    MaxUnderCap,
    /// The `s` that maximises `s · Σ f̂(p)` over the `⌊(C−1)/|𝒜|^s⌋` live prefixes with the
    /// largest estimates `f̂(p)` (the ones that fit): the estimated number of reports advanced,
    /// times how far they advance. A longer segment drops the weakest prefixes when it must.
    /// This is a heuristic of tally's (the paper's utility objective is unknown); it uses
    /// released estimates only.
    MaxMass,
}

impl SegmentPolicy {
    /// The segment for live prefixes with the estimates `live` (any order) over an alphabet of
    /// `alphabet` symbols under the cap `cap`, at most `remaining` symbols (the maximum code
    /// length left), at least 1.
    pub fn segment(self, live: &[f64], alphabet: u64, cap: u64, remaining: usize) -> usize {
        let count = live.len() as u64;
        let s = match self {
            Self::Fixed(s) => s,
            Self::MaxUnderCap => {
                let mut s = 1;
                while fits(count, alphabet, s + 1, cap) {
                    s += 1;
                }
                s
            }
            Self::MaxMass => {
                let mut sorted: Vec<f64> = live.iter().map(|e| e.max(0.0)).collect();
                sorted.sort_by(|a, b| b.total_cmp(a));
                let mut prefix_sums = Vec::with_capacity(sorted.len() + 1);
                prefix_sums.push(0.0);
                for e in &sorted {
                    prefix_sums.push(prefix_sums.last().copied().unwrap_or(0.0) + e);
                }
                let mut best = (1, f64::NEG_INFINITY);
                let mut s = 1;
                while s <= remaining.max(1) {
                    let kept = Self::capacity(alphabet, s, cap).min(count);
                    if kept == 0 {
                        break;
                    }
                    // Unwrap safety: kept ≤ live.len().
                    let mass = prefix_sums[usize::try_from(kept).expect("index")];
                    let score = s as f64 * mass;
                    if score > best.1 {
                        best = (s, score);
                    }
                    s += 1;
                }
                best.0
            }
        };
        s.min(remaining).max(1)
    }

    /// How many prefixes fit under the cap with segment `s`: `⌊(C − 1)/|𝒜|^s⌋`.
    pub fn capacity(alphabet: u64, s: usize, cap: u64) -> u64 {
        match power(alphabet, s) {
            Some(width) => (cap - 1) / width,
            None => 0,
        }
    }
}

/// `alphabet^s`, or `None` past `u64`.
fn power(alphabet: u64, s: usize) -> Option<u64> {
    u32::try_from(s).ok().and_then(|s| alphabet.checked_pow(s))
}

/// Whether `live·alphabet^s + 1 ≤ cap`.
fn fits(live: u64, alphabet: u64, s: usize, cap: u64) -> bool {
    power(alphabet, s)
        .and_then(|w| w.checked_mul(live))
        .is_some_and(|size| size < cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_under_cap_is_the_largest_fitting_segment() {
        // 2^13 + 1 ≤ 10^4 < 2^14 + 1.
        let live = |n: usize| vec![1.0; n];
        assert_eq!(
            SegmentPolicy::MaxUnderCap.segment(&live(1), 2, 10_000, 64),
            13
        );
        assert_eq!(
            SegmentPolicy::MaxUnderCap.segment(&live(100), 2, 10_000, 64),
            6
        );
        assert_eq!(
            SegmentPolicy::MaxUnderCap.segment(&live(100), 2, 10_000, 4),
            4
        );
        // Nothing fits: one symbol, and the caller prunes.
        assert_eq!(
            SegmentPolicy::MaxUnderCap.segment(&live(10_000), 2, 10_000, 64),
            1
        );
        assert_eq!(SegmentPolicy::capacity(2, 1, 10_000), 4999);
        assert_eq!(
            SegmentPolicy::Fixed(3).segment(&live(10_000), 2, 10_000, 2),
            2
        );
    }

    #[test]
    fn max_mass_trades_weak_prefixes_for_depth() {
        // One prefix: the whole cap, as max-under-cap.
        assert_eq!(SegmentPolicy::MaxMass.segment(&[5.0], 2, 10_000, 64), 13);
        // 100 prefixes, one strong: s = 13 keeps only the strong one, worth 13·1000 against
        // 6·(1000 + 99) at s = 6.
        let mut live = vec![1.0; 99];
        live.push(1000.0);
        assert_eq!(SegmentPolicy::MaxMass.segment(&live, 2, 10_000, 64), 13);
        // Equal prefixes: the capacity halves with every extra bit, so s = 6 keeps all.
        assert_eq!(
            SegmentPolicy::MaxMass.segment(&vec![1.0; 100], 2, 10_000, 64),
            6
        );
    }
}
