//! Any registered task kind run as the server runs it: [`run_task`].

use rand::{Rng, SeedableRng};
use rand_chacha::{ChaCha12Rng, ChaCha20Rng};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tally_core::protocol::wire::DeviceResponder;
use tally_core::sampling::{KeyedCoin, PoissonSampler, SamplingKey};
use tally_messages::TaskSpec;
use tally_protocol::{AskResponder, Engine, draw_public_coins};

use crate::Error;
use crate::rng::{Purpose, round_seed, stream};
use crate::round::clients_per_chunk;

/// The devices a task runs over, each holding its data as the text a device reads (its item,
/// word or number).
#[derive(Debug)]
pub enum Devices<'a, S> {
    /// One device per entry, answering with its own coins: the path every other is equal in
    /// law to. Where a device's one coin is whether it sends
    /// ([`DeviceResponder::sending_rate`]), the devices that send are drawn by exact geometric
    /// gaps between them ([`PoissonSampler`]), in law their own coins, and only they answer.
    Each(&'a [S]),
    /// `holders` devices holding each `data`, in the order given: a population as its
    /// distinct data's counts. A round that can draws its aggregator from the counts alone
    /// ([`Engine::counted`]: a histogram over a public domain, with
    /// [`tally_core::protocol::CountedRound::aggregate_counts`]); in the others the devices
    /// are answered a distinct datum at a time ([`DeviceResponder::respond_held`]): one exact
    /// binomial draw of how many send, where a round samples its devices, and one report
    /// counted `holders` times where a device's report is a function of its data. Equal in
    /// law to [`Devices::Each`] over the data listed `holders` times each, at a cost of the
    /// distinct data rather than the devices.
    Counted(&'a [(S, u64)]),
    /// One device per `(id, data)`, each id once, whose coin of whether to send is keyed:
    /// device `id` sends in round `r` (from 1) when [`KeyedCoin::flip`]`(r, id)` of `key`
    /// comes up heads, at the round's rate ([`DeviceResponder::sending_rate`]), as
    /// [`crate::run_keyed_sample_threshold`] flips a client's coin. The devices' coins are
    /// then a function of the key and their ids alone, whatever their order and wherever
    /// they are answered. Only kinds whose devices flip that one coin, or none, run so; a
    /// round's rate must be one a keyed coin uses exactly ([`tally_core::sampling::keyed_rate`]),
    /// so the engine's guarantee is the guarantee of the coins flipped.
    Keyed {
        /// Each device's id and data.
        devices: &'a [(S, S)],
        /// The secret key of the coins.
        key: &'a SamplingKey,
    },
}

impl<S> Clone for Devices<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Devices<'_, S> {}

impl<S: AsRef<str>> Devices<'_, S> {
    /// How many devices there are.
    fn len(&self) -> u64 {
        match self {
            Self::Each(data) => data.len() as u64,
            Self::Counted(held) => held.iter().map(|(_, holders)| holders).sum(),
            Self::Keyed { devices, .. } => devices.len() as u64,
        }
    }

    /// For keyed devices, the first id given twice, with the two devices, from 1, that share
    /// it.
    fn repeated_id(&self) -> Option<(String, u64, u64)> {
        let Self::Keyed { devices, .. } = self else {
            return None;
        };
        let mut first: FxHashMap<&str, usize> = FxHashMap::default();
        devices.iter().enumerate().find_map(|(index, (id, _))| {
            let id = id.as_ref();
            let seen = *first.entry(id).or_insert(index);
            (seen != index).then(|| (id.to_owned(), seen as u64 + 1, index as u64 + 1))
        })
    }

    /// The first device, from 1, whose data `responder` cannot take, with its data.
    fn refused(&self, responder: &dyn DeviceResponder) -> Option<(u64, String)> {
        let refused = |data: &S| !responder.accepts(data.as_ref());
        match self {
            Self::Each(data) => data
                .iter()
                .position(refused)
                .map(|index| (index as u64 + 1, data[index].as_ref().to_owned())),
            Self::Counted(held) => {
                let index = held
                    .iter()
                    .position(|(data, holders)| *holders > 0 && refused(data))?;
                let before: u64 = held[..index].iter().map(|(_, holders)| holders).sum();
                Some((before + 1, held[index].0.as_ref().to_owned()))
            }
            Self::Keyed { devices, .. } => devices
                .iter()
                .position(|(_, data)| refused(data))
                .map(|index| (index as u64 + 1, devices[index].1.as_ref().to_owned())),
        }
    }
}

/// Runs the task `spec` asks for, of any kind the registry defines, over `devices`, as the
/// server runs it, and returns the document the finished task publishes.
///
/// Each round is the engine's ([`Engine::open`]): every device answers the round's ask through
/// the responder a device runs ([`AskResponder`]), abstaining where its report would be longer
/// than `spec.rounds.max_report_bytes`; the devices (or, for [`Devices::Counted`], the
/// distinct data) are split into the chunks of [`crate::run_round`] and chunk `k` flips its
/// coins from stream `k` of the round's own seed; the reports are counted, in the devices'
/// order, by the round's aggregator, whose coins are the next stream of a `ChaCha20Rng`
/// seeded with `seed`: the coins a server started with `Server::start_seeded(seed)` gives its
/// rounds, in order. Every device uploads in every round (the cohort target plays no part).
/// A kind whose mechanism publishes public coins and whose spec names none draws them from
/// `seed`, as the server draws a new task's. [`Devices::Keyed`] flip their coins with their
/// key instead of the chunks' streams: their reports are then a function of the key and the
/// devices, in any order; the aggregator's coins are still the seed's.
///
/// # Privacy
///
/// The release carries the guarantee the engine computes for `spec`, as on the server, only
/// while `seed` (and the key of keyed devices) is secret: whoever knows it knows every coin
/// and noise draw of the run. Run it on proxy data to tune a task, not to release a statistic
/// of private data.
///
/// # Errors
///
/// [`Error::Task`] if the engine refuses `spec`, a round gets fewer uploads than
/// `spec.rounds.min_cohort` (the server would not release it), or a round's aggregator refuses
/// a report, or keyed devices meet a round whose devices flip other coins than whether to send
/// or whose rate a keyed coin cannot flip exactly; [`Error::Device`] if a device's data cannot
/// answer a round (a word in a round over numbers); [`Error::DeviceTwice`] if keyed devices
/// give an id twice.
pub fn run_task<S: AsRef<str> + Sync>(
    spec: &TaskSpec,
    devices: Devices<'_, S>,
    seed: u64,
) -> Result<String, Error> {
    let mut spec = spec.clone();
    let mut public_coins = stream(seed, Purpose::PublicCoins, 0);
    draw_public_coins(&mut spec.kind, || public_coins.next_u64());
    let spec = &spec;
    let (mut engine, _) = Engine::build(spec).map_err(Error::Task)?;
    if let Some((id, first, again)) = devices.repeated_id() {
        return Err(Error::DeviceTwice { id, first, again });
    }
    let uploads = devices.len();
    if uploads < spec.rounds.min_cohort {
        return Err(Error::Task(format!(
            "{uploads} devices: every round would close below its minimum cohort of {} and \
             release nothing; give at least that many, or a smaller min_cohort",
            spec.rounds.min_cohort
        )));
    }
    let max_bytes = spec.rounds.max_report_bytes as usize;
    let mut coins = ChaCha20Rng::seed_from_u64(seed);
    let mut round = 0;
    while engine.advance() {
        round += 1;
        let in_round = |e: String| Error::Task(format!("round {round}: {e}"));
        let aggregator_coins = ChaCha20Rng::from_rng(&mut coins);
        let opened = engine.open(spec.sampling, aggregator_coins.clone());
        let responder = opened
            .ask
            .responder(spec.sampling)
            .map_err(|e| in_round(e.to_string()))?;
        if let Some((device, data)) = devices.refused(responder.as_ref()) {
            return Err(Error::Device {
                device,
                round,
                data,
            });
        }
        let devices_seed = round_seed(seed, round);
        let counted = match devices {
            Devices::Counted(held) => {
                engine
                    .counted(spec.sampling, aggregator_coins)
                    .and_then(|counted| {
                        counted.aggregate(
                            &mut held.iter().map(|(data, holders)| (data.as_ref(), *holders)),
                            &mut stream(devices_seed, Purpose::DeviceCoins, 0),
                        )
                    })
            }
            Devices::Each(_) | Devices::Keyed { .. } => None,
        };
        let aggregator = match counted {
            Some(aggregator) => aggregator,
            None => {
                let mut aggregator = opened.aggregator;
                let reports = respond(devices, responder.as_ref(), max_bytes, round, devices_seed)
                    .map_err(in_round)?;
                for (report, times) in reports {
                    // One device's report is absorbed as the server absorbs it (with its own
                    // coin, where the aggregator flips them); several at once, in one step.
                    let absorbed = match times {
                        1 => aggregator.absorb(report),
                        _ => aggregator.absorb_repeated(report, times),
                    };
                    absorbed.map_err(|e| in_round(e.to_string()))?;
                }
                aggregator
            }
        };
        engine.observe(aggregator.release()).map_err(in_round)?;
    }
    Ok(engine.document(spec))
}

/// The reports `devices` send in round `round` through `responder`, each with how many send
/// it in a row, in the devices' order; chunk `k` of them flips its coins from stream `k` of
/// `seed`, but for the sending coins of keyed devices.
///
/// # Errors
///
/// Why keyed devices cannot answer the round ([`keyed_coin`]).
fn respond<S: AsRef<str> + Sync>(
    devices: Devices<'_, S>,
    responder: &dyn DeviceResponder,
    max_bytes: usize,
    round: usize,
    seed: u64,
) -> Result<Vec<(String, u64)>, String> {
    Ok(match devices {
        Devices::Each(data) => match responder.sending_rate() {
            // Exact gap skipping: the sending devices' places, by exact geometric gaps
            // between them, in law the devices' own coins; only they are answered.
            Some(rate) => {
                let sampler = PoissonSampler::new(rate).map_err(|e| e.to_string())?;
                by_chunk(data, seed, |data, coins| {
                    let sending: Vec<u64> = sampler.indices(data.len() as u64, coins).collect();
                    sending
                        .into_iter()
                        .filter_map(|index| {
                            // Unwrap safety: a sampled place is below the chunk's length.
                            let data = data[usize::try_from(index).expect("a place")].as_ref();
                            let report = responder.respond_sent(data, max_bytes, coins);
                            report.map(|report| (report, 1))
                        })
                        .collect()
                })
            }
            None => in_chunks(data, seed, |data, coins| {
                let report = responder.respond(data.as_ref(), max_bytes, coins);
                report.map(|report| (report, 1))
            }),
        },
        Devices::Counted(held) => in_chunks(held, seed, |(data, holders), coins| {
            responder.respond_held(data.as_ref(), *holders, max_bytes, coins)
        }),
        Devices::Keyed { devices, key } => {
            let coin = keyed_coin(responder, key)?;
            in_chunks(devices, seed, |(id, data), coins| {
                let sends = coin
                    .as_ref()
                    .is_none_or(|coin| coin.flip(round as u64, id.as_ref().as_bytes()));
                let report = sends
                    .then(|| responder.respond_sent(data.as_ref(), max_bytes, coins))
                    .flatten();
                report.map(|report| (report, 1))
            })
        }
    })
}

/// The keyed coin of `key` that decides whether a device answering `responder` sends, or
/// `None` where a device flips no coin.
///
/// # Errors
///
/// A responder whose devices flip other coins (a local randomizer's), which a key does not
/// flip; a sending rate that is not a multiple of `2^-64`, which a keyed coin would flip at
/// a lower rate than the one the engine's guarantee is computed for.
fn keyed_coin(
    responder: &dyn DeviceResponder,
    key: &SamplingKey,
) -> Result<Option<KeyedCoin>, String> {
    let Some(rate) = responder.sending_rate() else {
        return if responder.flips_no_coin() {
            Ok(None)
        } else {
            Err(
                "its devices flip coins of their own besides whether to send (a local \
                 randomizer's), which keyed devices cannot flip by their key: give the devices \
                 without ids and key, their coins drawn from the seed"
                    .to_owned(),
            )
        };
    };
    let coin = KeyedCoin::new(key.clone(), rate).map_err(|e| e.to_string())?;
    if coin.rate().to_bits() != rate.to_bits() {
        return Err(format!(
            "its devices send with probability {rate}, which a keyed coin cannot flip exactly \
             (it flips multiples of 2^-64, as every rate from 2^-12 ≈ 0.000244 up is): give a \
             sampling rate of at least 0.00025, or the devices without ids and key"
        ));
    }
    Ok(Some(coin))
}

/// What `answer` gives for each of `entries`, in order, with coins as [`by_chunk`] gives.
fn in_chunks<T, A>(
    entries: &[T],
    seed: u64,
    answer: impl Fn(&T, &mut dyn Rng) -> A + Sync,
) -> Vec<(String, u64)>
where
    T: Sync,
    A: IntoIterator<Item = (String, u64)>,
{
    by_chunk(entries, seed, |entries, coins| {
        entries
            .iter()
            .flat_map(|entry| answer(entry, coins))
            .collect()
    })
}

/// What `answer` gives for each chunk of `entries`, in order: the entries split into the
/// chunks of [`crate::run_round`], run in parallel, chunk `k` answering with coins from stream
/// `k` of `seed`.
fn by_chunk<T: Sync>(
    entries: &[T],
    seed: u64,
    answer: impl Fn(&[T], &mut ChaCha12Rng) -> Vec<(String, u64)> + Sync,
) -> Vec<(String, u64)> {
    let answered: Vec<Vec<(String, u64)>> = entries
        .par_chunks(clients_per_chunk(entries.len()))
        .enumerate()
        .map(|(chunk, entries)| {
            answer(
                entries,
                &mut stream(seed, Purpose::DeviceCoins, chunk as u64),
            )
        })
        .collect();
    answered.into_iter().flatten().collect()
}
