//! Poisson sampling of a population by geometric gap skipping.

use core::iter::FusedIterator;

use rand::Rng;
use rand_distr::Distribution;

use super::{ExactGeometric, check_probability};
use crate::Error;

/// Poisson sampling with rate `p`: every index `i < n` is selected by its own independent
/// `Ber(p)` coin, exactly for the real number `p` the `f64` denotes.
///
/// Instead of flipping `n` coins, [`PoissonSampler::indices`] draws the gaps between selected
/// indices: in a sequence of independent `Ber(p)` coins, the number of failures before each
/// success is an independent [`ExactGeometric`]`(p)` variable, so walking the sequence gap by
/// gap produces exactly the same joint distribution of selected indices while touching only the
/// `≈ n·p` selected ones (expected time `O(n·p + 1)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonSampler {
    p: f64,
    /// `None` when `p = 0`.
    gap: Option<ExactGeometric>,
}

impl PoissonSampler {
    /// A sampler with rate `p`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p` is finite and in `[0, 1]`.
    pub fn new(p: f64) -> Result<Self, Error> {
        let p = check_probability("p", p)?;
        let gap = if p > 0.0 {
            Some(ExactGeometric::new(p)?)
        } else {
            None
        };
        Ok(Self { p, gap })
    }

    /// The sampling rate `p`.
    pub fn sampling_rate(&self) -> f64 {
        self.p
    }

    /// The selected indices among `0..n`, in increasing order.
    ///
    /// The iterator draws from `rng` lazily; dropping it early leaves the rest undrawn.
    pub fn indices<'a, R: Rng + ?Sized>(&'a self, n: u64, rng: &'a mut R) -> PoissonIndices<'a, R> {
        PoissonIndices {
            gap: self.gap.as_ref(),
            next: 0,
            n,
            rng,
        }
    }
}

/// The indices selected by a [`PoissonSampler`], in increasing order.
#[derive(Debug)]
pub struct PoissonIndices<'a, R: ?Sized> {
    /// `None` once exhausted (or when `p = 0`).
    gap: Option<&'a ExactGeometric>,
    /// The first index whose coin has not been decided yet.
    next: u64,
    n: u64,
    rng: &'a mut R,
}

impl<R: Rng + ?Sized> Iterator for PoissonIndices<'_, R> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        let gap = self.gap?;
        if self.next >= self.n {
            self.gap = None;
            return None;
        }
        // The coins of next, next+1, …, next+g−1 fail and the coin of next+g succeeds.
        match self.next.checked_add(gap.sample(self.rng)) {
            Some(i) if i < self.n => {
                self.next = i + 1;
                Some(i)
            }
            _ => {
                self.gap = None;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.gap {
            None => (0, Some(0)),
            Some(_) => (0, usize::try_from(self.n - self.next.min(self.n)).ok()),
        }
    }
}

impl<R: Rng + ?Sized> FusedIterator for PoissonIndices<'_, R> {}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn rejects_invalid_rates() {
        for p in [-1e-9, 1.0000001, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    PoissonSampler::new(p),
                    Err(Error::InvalidParameter { name: "p", .. })
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn degenerate_rates_and_sizes() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let none = PoissonSampler::new(0.0).unwrap();
        assert_eq!(none.indices(1000, &mut rng).count(), 0);
        let all = PoissonSampler::new(1.0).unwrap();
        assert!(all.indices(1000, &mut rng).eq(0..1000));
        let half = PoissonSampler::new(0.5).unwrap();
        assert_eq!(half.indices(0, &mut rng).count(), 0);
        assert_eq!(half.sampling_rate().to_bits(), 0.5f64.to_bits());
        // Indices near u64::MAX do not overflow.
        let tail = PoissonSampler::new(1.0).unwrap();
        let mut it = tail.indices(u64::MAX, &mut rng);
        assert_eq!(it.next(), Some(0));
    }

    #[test]
    fn indices_increase_and_stay_in_range() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let s = PoissonSampler::new(0.05).unwrap();
        let v: Vec<u64> = s.indices(10_000, &mut rng).collect();
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert!(v.iter().all(|&i| i < 10_000));
        assert!((350..650).contains(&v.len()), "{}", v.len());
        let mut it = s.indices(10, &mut rng);
        for _ in it.by_ref() {}
        assert_eq!(it.next(), None);
    }
}
