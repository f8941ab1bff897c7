//! Synthetic populations from `NAME:key=value,...` specifications.
//!
//! See [`SyntheticSpec`] for the generators and the specification syntax.

use std::fmt;
use std::str::FromStr;

use rand_distr::{Binomial, Distribution, Zipf};
use rayon::prelude::*;
use tally_core::sampling::ExactGeometric;

use crate::Error;
use crate::population::{Population, Source};
use crate::rng::{Purpose, stream, uniform_below};

/// Clients per generation chunk (one ChaCha stream each).
const CHUNK: usize = 1 << 16;

/// The largest synthetic domain: ids are `u32`.
const MAX_DOMAIN: u64 = 1 << 32;

/// The known generators and their keys, for messages.
const KNOWN: &str = "geometric:n=N,domain=D, binomial:n=N,domain=D, zipf:n=N,domain=D,s=S \
                     or uniform:n=N,domain=D";

/// A synthetic item distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Generator {
    /// `Geometric(1/√domain)` truncated to `0..domain` (redrawn while out of range).
    Geometric {
        /// The number of items.
        domain: u64,
    },
    /// `Bin(domain − 1, 1/2)`.
    Binomial {
        /// The number of items.
        domain: u64,
    },
    /// Zipf with exponent `s` over ranks `1..=domain`; the item is `rank − 1`.
    Zipf {
        /// The number of items.
        domain: u64,
        /// The exponent, finite and `≥ 0` (`0` is uniform).
        s: f64,
    },
    /// Uniform on `0..domain`.
    Uniform {
        /// The number of items.
        domain: u64,
    },
}

impl Generator {
    /// The generator's name in specs.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Geometric { .. } => "geometric",
            Self::Binomial { .. } => "binomial",
            Self::Zipf { .. } => "zipf",
            Self::Uniform { .. } => "uniform",
        }
    }

    /// The number of items: every item is below it.
    pub fn domain(&self) -> u64 {
        match *self {
            Self::Geometric { domain }
            | Self::Binomial { domain }
            | Self::Zipf { domain, .. }
            | Self::Uniform { domain } => domain,
        }
    }
}

/// A validated synthetic population specification: a generator and a number of clients.
///
/// Parse one with [`str::parse`] (`"zipf:n=1000000,domain=100000,s=1.1".parse()`); its
/// [`Display`](fmt::Display) form parses back to the same spec.
///
/// | spec | item of each client |
/// | --- | --- |
/// | `geometric:n=N,domain=D` | `Geometric(p = 1/√D)` (failures before the first success), redrawn while `≥ D`: exactly the geometric truncated to `0..D` |
/// | `binomial:n=N,domain=D` | `Bin(D − 1, 1/2)` |
/// | `zipf:n=N,domain=D,s=S` | `rank − 1` for a Zipf rank in `1..=D` with exponent `S ≥ 0`, `Pr[rank = k] ∝ k^{−S}` |
/// | `uniform:n=N,domain=D` | uniform on `0..D` (exact) |
///
/// `N ≥ 1` clients, domain `1 ≤ D ≤ 2^32`; items are named by their decimal ids. Numbers may be
/// written as integers (`1000000`, `1_000_000`) or in exponent form when that is an exact
/// integer (`1e6`). Generation is parallel over chunks of 2^16 clients, each drawing from its
/// own ChaCha12 stream of the seed, so the items depend only on the spec and the seed, not on
/// the number of threads. The geometric sampler is tally's exact one (also the fastest at
/// hand); the binomial and Zipf samplers are `rand_distr`'s, which use floating point: fine for
/// synthetic data, which carries no privacy requirement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyntheticSpec {
    n: u64,
    generator: Generator,
}

impl SyntheticSpec {
    /// Validates `n ≥ 1` clients, `1 ≤ domain ≤ 2^32` and, for Zipf, a finite `s ≥ 0`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidValue`] naming the offending parameter.
    pub fn new(n: u64, generator: Generator) -> Result<Self, Error> {
        let spec = Self { n, generator };
        let invalid = |key, value: String, expected| Error::InvalidValue {
            spec: spec.to_string(),
            key,
            value,
            expected,
        };
        if n == 0 || usize::try_from(n).is_err() {
            return Err(invalid("n", n.to_string(), "an integer ≥ 1"));
        }
        let domain = generator.domain();
        if !(1..=MAX_DOMAIN).contains(&domain) {
            return Err(invalid(
                "domain",
                domain.to_string(),
                "an integer in [1, 2^32]",
            ));
        }
        if let Generator::Zipf { s, .. } = generator
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(invalid("s", s.to_string(), "a finite number ≥ 0"));
        }
        Ok(spec)
    }

    /// The number of clients.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The item distribution.
    pub fn generator(&self) -> Generator {
        self.generator
    }

    /// Draws the clients' items: deterministic for `(self, seed)`, independent of the number
    /// of threads.
    pub fn generate(&self, seed: u64) -> Vec<u32> {
        // Unwrap safety: `new` checked that n fits in usize.
        let n = usize::try_from(self.n).expect("n fits in usize");
        let mut items = vec![0u32; n];
        // Unwrap safety (all `expect`s below): `new` validated the parameters, for which the
        // rand_distr constructors cannot fail.
        match self.generator {
            Generator::Geometric { domain } => {
                let geometric =
                    ExactGeometric::new(1.0 / (domain as f64).sqrt()).expect("p in (0, 1]");
                fill(&mut items, seed, |rng| {
                    loop {
                        let x = geometric.sample(rng);
                        if x < domain {
                            return x as u32;
                        }
                    }
                });
            }
            Generator::Binomial { domain } => {
                let binomial = Binomial::new(domain - 1, 0.5).expect("p = 1/2");
                fill(&mut items, seed, |rng| binomial.sample(rng) as u32);
            }
            Generator::Zipf { domain, s } => {
                let zipf = Zipf::new(domain as f64, s).expect("n ≥ 1 and s ≥ 0");
                let top = domain as f64;
                fill(&mut items, seed, |rng| {
                    loop {
                        // Ranks are integers in [1, domain]; the check guards against rounding.
                        let rank = zipf.sample(rng);
                        if (1.0..=top).contains(&rank) {
                            return (rank as u64 - 1) as u32;
                        }
                    }
                });
            }
            Generator::Uniform { domain } => {
                fill(&mut items, seed, |rng| uniform_below(domain, rng) as u32);
            }
        }
        items
    }
}

/// Fills `items` chunk by chunk in parallel, chunk `i` drawing from its own stream.
fn fill<F>(items: &mut [u32], seed: u64, draw: F)
where
    F: Fn(&mut rand_chacha::ChaCha12Rng) -> u32 + Sync,
{
    items
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(index, chunk)| {
            let mut rng = stream(seed, Purpose::Synthetic, index as u64);
            for item in chunk {
                *item = draw(&mut rng);
            }
        });
}

impl Population {
    /// Generates a synthetic population: `spec.n()` clients with items drawn i.i.d. from the
    /// spec's generator with `seed`. The domain is the generator's, `0..domain`, named by
    /// decimal ids.
    pub fn synthetic(spec: &SyntheticSpec, seed: u64) -> Self {
        let items = spec.generate(seed);
        let source = Source::Synthetic { spec: *spec, seed };
        Self::from_synthetic(items, spec.generator.domain(), source)
    }
}

impl fmt::Display for SyntheticSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:n={},domain={}",
            self.generator.name(),
            self.n,
            self.generator.domain()
        )?;
        if let Generator::Zipf { s, .. } = self.generator {
            write!(f, ",s={s}")?;
        }
        Ok(())
    }
}

impl FromStr for SyntheticSpec {
    type Err = Error;

    /// Parses `NAME:key=value,...` as described at [`SyntheticSpec`].
    fn from_str(spec: &str) -> Result<Self, Error> {
        let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim();
        let (generator, expected): (&'static str, &'static str) = match name {
            "geometric" => ("geometric", "n and domain"),
            "binomial" => ("binomial", "n and domain"),
            "zipf" => ("zipf", "n, domain and s"),
            "uniform" => ("uniform", "n and domain"),
            _ => {
                return Err(Error::UnknownGenerator {
                    spec: spec.to_owned(),
                    name: name.to_owned(),
                    known: KNOWN,
                });
            }
        };
        let keys: &[&'static str] = if generator == "zipf" {
            &["n", "domain", "s"]
        } else {
            &["n", "domain"]
        };
        let mut values: [Option<&str>; 3] = [None; 3];
        for pair in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = key.trim();
            let slot = keys.iter().position(|&k| k == key);
            match slot {
                Some(i) if values[i].is_none() => values[i] = Some(value.trim()),
                _ => {
                    return Err(Error::UnknownKey {
                        spec: spec.to_owned(),
                        generator,
                        key: key.to_owned(),
                        expected,
                    });
                }
            }
        }
        let get = |i: usize| {
            values[i].ok_or(Error::MissingKey {
                spec: spec.to_owned(),
                generator,
                key: keys[i],
                expected,
            })
        };
        let invalid = |key, value: &str, expected| Error::InvalidValue {
            spec: spec.to_owned(),
            key,
            value: value.to_owned(),
            expected,
        };
        let n_text = get(0)?;
        let n = parse_count(n_text).ok_or_else(|| invalid("n", n_text, "an integer ≥ 1"))?;
        let domain_text = get(1)?;
        let domain = parse_count(domain_text)
            .filter(|d| (1..=MAX_DOMAIN).contains(d))
            .ok_or_else(|| invalid("domain", domain_text, "an integer in [1, 2^32]"))?;
        let generator = match generator {
            "geometric" => Generator::Geometric { domain },
            "binomial" => Generator::Binomial { domain },
            "uniform" => Generator::Uniform { domain },
            _ => {
                let s_text = get(2)?;
                let s = s_text
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| invalid("s", s_text, "a finite number ≥ 0"))?;
                Generator::Zipf { domain, s }
            }
        };
        if n == 0 {
            return Err(invalid("n", n_text, "an integer ≥ 1"));
        }
        Self::new(n, generator).map_err(|e| match e {
            Error::InvalidValue {
                key,
                value,
                expected,
                ..
            } => Error::InvalidValue {
                spec: spec.to_owned(),
                key,
                value,
                expected,
            },
            other => other,
        })
    }
}

/// A non-negative integer written plainly (`1000000`, `1_000_000`) or in exponent form that
/// is an exact integer below 2^53 (`1e6`, `2.5e3`).
fn parse_count(text: &str) -> Option<u64> {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    if let Ok(n) = plain.parse::<u64>() {
        return Some(n);
    }
    if !plain.contains(['e', 'E']) {
        return None;
    }
    let x: f64 = plain.parse().ok()?;
    (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 9_007_199_254_740_992.0)
        .then_some(x as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for text in [
            "geometric:n=1000000,domain=16384",
            "binomial:n=10,domain=1024",
            "zipf:n=1000000,domain=100000,s=1.1",
            "uniform:n=5,domain=4294967296",
        ] {
            let spec: SyntheticSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        let spec: SyntheticSpec = " zipf : s = 0 , domain=1e5, n=1_000 ".parse().unwrap();
        assert_eq!(spec.n(), 1000);
        assert_eq!(
            spec.generator(),
            Generator::Zipf {
                domain: 100_000,
                s: 0.0
            }
        );
    }

    #[test]
    fn parse_count_forms() {
        assert_eq!(parse_count("1e6"), Some(1_000_000));
        assert_eq!(parse_count("2.5e3"), Some(2500));
        assert_eq!(parse_count("1_000"), Some(1000));
        assert_eq!(parse_count("1.5"), None);
        assert_eq!(parse_count("1.5e0"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("x"), None);
        assert_eq!(parse_count(""), None);
    }

    #[test]
    fn domain_one_is_constant() {
        for text in [
            "geometric:n=100,domain=1",
            "binomial:n=100,domain=1",
            "zipf:n=100,domain=1,s=2",
            "uniform:n=100,domain=1",
        ] {
            let spec: SyntheticSpec = text.parse().unwrap();
            assert!(spec.generate(3).iter().all(|&x| x == 0), "{text}");
        }
    }
}
