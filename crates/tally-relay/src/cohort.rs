//! What the relay forwards when a round closes: the cohort it picks among the devices that
//! uploaded, the sample-and-threshold coins it flips for them, and the one uniform permutation
//! of all their sealed messages.
//!
//! # Privacy
//!
//! Every draw is exact and comes from the round's secret stream of coins (seeded from the
//! operating system's CSPRNG; tests alone can fix it, see [`crate::Relay::start_seeded`]):
//! - each relaying credential keeps a uniformly random subset of at most `per_credential`
//!   of the uploads it checked in ([`uniform_subset`]), so no one credential fills a cohort;
//! - the cohort is a uniformly random subset of `min(target, pool)` of what remains
//!   ([`uniform_subset`]): the order in which devices uploaded plays no part;
//! - under relay-side sampling each picked device is kept by its own `Bernoulli(p)` coin
//!   ([`PoissonSampler`], exact for the real number `p` the `f64` denotes), so a device
//!   cannot choose to be sampled and the aggregator receives only the sampled reports;
//! - the messages of every kept device, a shuffle-model report's several messages apart,
//!   are permuted together by Fisher–Yates on exact uniform integers ([`uniform_shuffle`]):
//!   every order has probability `1/k!`, so the batch says nothing of who sent which message,
//!   which messages came from one device, or when.

use std::collections::BTreeMap;

use rand::Rng;
use tally_core::protocol::uniform_shuffle;
use tally_core::sampling::{PoissonSampler, uniform_subset};

/// One device's upload as the relay holds it until its round closes.
pub(crate) struct HeldUpload {
    /// The credential that checked the device in: its own device credential, or the
    /// operator credential that relayed it (numbered within the round).
    pub(crate) relayer: u32,
    /// Its sealed messages (none for an abstention).
    pub(crate) messages: Vec<String>,
}

/// How a round's cohort is picked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CohortRule {
    /// The most devices picked: the round's cohort target.
    pub(crate) target: u64,
    /// The most devices one relaying credential contributes.
    pub(crate) per_credential: u64,
    /// The sample-and-threshold coins the relay flips for each picked device, if it flips
    /// them.
    pub(crate) sampling: Option<PoissonSampler>,
}

/// What the relay forwards for a round.
pub(crate) struct Forward {
    /// Devices picked for the cohort, before any sampling coin.
    pub(crate) cohort: u64,
    /// The sealed messages of the kept devices, uniformly permuted.
    pub(crate) messages: Vec<String>,
}

/// Picks the cohort among `uploads` by `rule`, flips the sampling coins and permutes every
/// kept message, all with `rng`.
pub(crate) fn pick<R: Rng + ?Sized>(
    uploads: Vec<HeldUpload>,
    rule: CohortRule,
    rng: &mut R,
) -> Forward {
    let pool = capped(uploads, rule.per_credential, rng);
    let size = rule.target.min(pool.len() as u64);
    // Unwrap safety: `size` is at most the pool's length, which fits in memory.
    let chosen = uniform_subset(pool.len() as u64, size, rng).expect("a subset of the pool");
    let mut pool: Vec<Option<HeldUpload>> = pool.into_iter().map(Some).collect();
    let mut picked: Vec<HeldUpload> = chosen
        .iter()
        .filter_map(|&i| pool[i as usize].take())
        .collect();
    if let Some(coins) = rule.sampling {
        let mut kept: Vec<HeldUpload> = Vec::new();
        let mut all = picked.into_iter().map(Some).collect::<Vec<_>>();
        for i in coins.indices(all.len() as u64, rng) {
            kept.extend(all[i as usize].take());
        }
        picked = kept;
    }
    let mut messages: Vec<String> = picked.into_iter().flat_map(|u| u.messages).collect();
    uniform_shuffle(&mut messages, rng);
    Forward {
        cohort: size,
        messages,
    }
}

/// The uploads left once every relaying credential keeps a uniformly random subset of at most
/// `cap` of its own, in an order that depends on the credentials alone (so that a seeded
/// stream draws the same cohort from the same uploads).
fn capped<R: Rng + ?Sized>(uploads: Vec<HeldUpload>, cap: u64, rng: &mut R) -> Vec<HeldUpload> {
    let mut by_relayer: BTreeMap<u32, Vec<HeldUpload>> = BTreeMap::new();
    for upload in uploads {
        by_relayer.entry(upload.relayer).or_default().push(upload);
    }
    let mut pool = Vec::new();
    for (_, own) in by_relayer {
        if own.len() as u64 <= cap {
            pool.extend(own);
            continue;
        }
        // Unwrap safety: `cap` is below the credential's count of uploads.
        let kept = uniform_subset(own.len() as u64, cap, rng).expect("a subset of its uploads");
        let mut own: Vec<Option<HeldUpload>> = own.into_iter().map(Some).collect();
        pool.extend(kept.iter().filter_map(|&i| own[i as usize].take()));
    }
    pool
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_stats_tests::binomial_interval;

    use super::*;

    fn uploads(relayers: &[(u32, usize)]) -> Vec<HeldUpload> {
        relayers
            .iter()
            .flat_map(|&(relayer, count)| {
                (0..count).map(move |i| HeldUpload {
                    relayer,
                    messages: vec![format!("{relayer}-{i}")],
                })
            })
            .collect()
    }

    fn rule(target: u64, per_credential: u64, sampling_rate: Option<f64>) -> CohortRule {
        CohortRule {
            target,
            per_credential,
            sampling: sampling_rate.map(|p| PoissonSampler::new(p).unwrap()),
        }
    }

    /// 40 devices upload, one after the other; the cohort target is 10. Over 20,000 closes,
    /// the first device to upload is picked as often as `Binomial(20000, 10/40)` allows at
    /// α = 1e-6, and so is the last: arrival order earns nothing. First come, first served
    /// (the first 10) is caught.
    #[test]
    fn stat_the_cohort_is_uniform_among_the_devices_that_uploaded() {
        const CLOSES: u64 = 20_000;
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let devices: Vec<(u32, usize)> = (0..40).map(|d| (d, 1)).collect();
        let (mut first, mut last) = (0, 0);
        for _ in 0..CLOSES {
            let forward = pick(uploads(&devices), rule(10, 1, None), &mut rng);
            assert_eq!(forward.cohort, 10);
            assert_eq!(forward.messages.len(), 10);
            first += u64::from(forward.messages.iter().any(|m| m == "0-0"));
            last += u64::from(forward.messages.iter().any(|m| m == "39-0"));
        }
        let (lo, hi) = binomial_interval(CLOSES, 0.25, 1e-6);
        for (who, count) in [("first", first), ("last", last)] {
            assert!(
                (lo..=hi).contains(&count),
                "the {who} device was picked {count} times, expected {lo} to {hi}"
            );
        }
        // The mutant: the first `target` uploads.
        let first_come: Vec<HeldUpload> = uploads(&devices).into_iter().take(10).collect();
        assert!(first_come.iter().any(|u| u.messages[0] == "0-0"));
        assert!(!(lo..=hi).contains(&CLOSES));
    }

    /// One operator credential relays 1,000 uploads and 50 devices upload with their own
    /// credentials, with a cap of 20 per credential and a target of 100: the operator's
    /// uploads fill exactly 20 places (a cohort of 70), and which 20 is uniform among its
    /// own. Without the cap it would hold about 95 of 100.
    #[test]
    fn no_relaying_credential_contributes_more_than_its_cap() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut relayers = vec![(0, 1000)];
        relayers.extend((1..=50).map(|d| (d, 1)));
        let mut seen_first = 0;
        for _ in 0..2000 {
            let forward = pick(uploads(&relayers), rule(100, 20, None), &mut rng);
            assert_eq!(forward.cohort, 70);
            let relayed = forward
                .messages
                .iter()
                .filter(|m| m.starts_with("0-"))
                .count();
            assert_eq!(relayed, 20);
            seen_first += u64::from(forward.messages.iter().any(|m| m == "0-0"));
        }
        // Binomial(2000, 20/1000) at α = 1e-6.
        let (lo, hi) = binomial_interval(2000, 0.02, 1e-6);
        assert!((lo..=hi).contains(&seen_first), "{seen_first}");
        let uncapped = pick(uploads(&relayers), rule(100, u64::MAX, None), &mut rng);
        let relayed = uncapped
            .messages
            .iter()
            .filter(|m| m.starts_with("0-"))
            .count();
        assert!(relayed > 80, "{relayed}");
    }

    /// Under relay-side sampling each of 1,000 picked devices is kept with probability 0.3:
    /// over 200 closes the number kept is `Binomial(200000, 0.3)`'s at α = 1e-6, the cohort
    /// is the number picked, and an abstention's device forwards nothing.
    #[test]
    fn stat_the_relay_forwards_only_the_sampled_devices_messages() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let devices: Vec<(u32, usize)> = (0..1000).map(|d| (d, 1)).collect();
        let mut kept = 0;
        for _ in 0..200 {
            let forward = pick(uploads(&devices), rule(1000, 1, Some(0.3)), &mut rng);
            assert_eq!(forward.cohort, 1000);
            kept += forward.messages.len() as u64;
        }
        let (lo, hi) = binomial_interval(200_000, 0.3, 1e-6);
        assert!(
            (lo..=hi).contains(&kept),
            "{kept} kept, expected {lo} to {hi}"
        );
        let abstention = vec![HeldUpload {
            relayer: 0,
            messages: Vec::new(),
        }];
        let forward = pick(abstention, rule(10, 1, None), &mut rng);
        assert_eq!((forward.cohort, forward.messages.len()), (1, 0));
    }

    /// 8 devices send two messages each. Over 8,000 closes, the first forwarded message is
    /// the first device's as often as `Binomial(8000, 1/8)` allows at α = 1e-6, and the first
    /// two forwarded messages come from one device as often as `Binomial(8000, 1/15)` allows:
    /// the messages are permuted together, not device by device. Forwarding in upload order,
    /// or permuting devices' bundles, is caught.
    #[test]
    fn stat_every_message_of_the_round_is_permuted_together() {
        const CLOSES: u64 = 8_000;
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let bundles = || -> Vec<HeldUpload> {
            (0..8)
                .map(|d| HeldUpload {
                    relayer: d,
                    messages: vec![format!("{d}a"), format!("{d}b")],
                })
                .collect()
        };
        let device = |m: &str| m[..m.len() - 1].to_owned();
        let (mut first, mut together) = (0, 0);
        for _ in 0..CLOSES {
            let forward = pick(bundles(), rule(8, 1, None), &mut rng);
            let mut sorted = forward.messages.clone();
            sorted.sort_unstable();
            let mut sent: Vec<String> = bundles().into_iter().flat_map(|u| u.messages).collect();
            sent.sort_unstable();
            assert_eq!(sorted, sent);
            first += u64::from(device(&forward.messages[0]) == "0");
            together += u64::from(device(&forward.messages[0]) == device(&forward.messages[1]));
        }
        let (lo, hi) = binomial_interval(CLOSES, 1.0 / 8.0, 1e-6);
        assert!((lo..=hi).contains(&first), "{first}, expected {lo} to {hi}");
        let (lo, hi) = binomial_interval(CLOSES, 1.0 / 15.0, 1e-6);
        assert!(
            (lo..=hi).contains(&together),
            "{together}, expected {lo} to {hi}"
        );
        // Bundles permuted whole put a device's two messages first and second every time.
        assert!(!(lo..=hi).contains(&CLOSES));
    }
}
