//! The simulator's executor of one round of the round protocol: every client answers the
//! round's query with its own coins, one aggregator absorbs the reports and releases through
//! the round's release rule, as the federated server's aggregator does.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use tally_core::protocol::{
    CountedRound, DeviceQuery, DomainRound, RoundAggregator, RoundProtocol,
};

use crate::rng::{Purpose, stream};

/// About this many chunks per round, so that even a small population (a local oracle whose
/// aggregator does `O(k)` work per report) runs in parallel; each chunk's reports are absorbed
/// by an aggregator of its own and merged.
const CHUNKS: usize = 32;
/// The fewest clients per chunk (fewer would cost more in aggregators than they save).
const MIN_CLIENTS_PER_CHUNK: usize = 1 << 10;
/// The most clients per chunk.
const MAX_CLIENTS_PER_CHUNK: usize = 1 << 16;

/// The clients per chunk of a round over `clients` clients: a function of their number only,
/// so that the release never depends on the number of threads.
pub(crate) fn clients_per_chunk(clients: usize) -> usize {
    clients
        .div_ceil(CHUNKS)
        .clamp(MIN_CLIENTS_PER_CHUNK, MAX_CLIENTS_PER_CHUNK)
}

/// The secret coins of the aggregator of a round run with `seed`: the stream a federated
/// server started with the same seed (`tally_server::Server::start_seeded`) gives the first
/// round it opens, `ChaCha20Rng::from_rng(ChaCha20Rng::seed_from_u64(seed))`. A release whose
/// noise is drawn only from these coins is then the server's, byte for byte, for the same
/// reports.
pub fn aggregator_coins(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::from_rng(&mut ChaCha20Rng::seed_from_u64(seed))
}

/// Runs `round` over the clients holding `inputs` with randomness from `seed`, and returns
/// its release.
///
/// The clients are split into chunks (about 32, of 2^10 to 2^16 clients each, a function of
/// the number of clients only) run in parallel: chunk `k`'s clients answer with
/// coins from their own ChaCha stream (`k` of the device-coin purpose) into an aggregator
/// whose coins are chunk `k` of the shard purpose; the chunks' aggregators are merged in
/// chunk order into the round's aggregator, whose coins are [`aggregator_coins`], which
/// releases. The release depends only on the inputs and `seed`, never on the number of
/// threads.
pub fn run_round<P, I>(round: &P, inputs: &[I], seed: u64) -> P::Release
where
    P: RoundProtocol<Query: DeviceQuery<Input = I> + Sync, Aggregator: Send> + Sync,
    I: Sync,
{
    let query = round.query();
    let shards = inputs
        .par_chunks(clients_per_chunk(inputs.len()))
        .enumerate()
        .map(|(chunk, clients)| {
            let index = chunk as u64;
            let mut devices = stream(seed, Purpose::DeviceCoins, index);
            let shard_coins = ChaCha20Rng::from_rng(&mut stream(seed, Purpose::ShardCoins, index));
            let mut shard = round.aggregator(shard_coins);
            for input in clients {
                if let Some(report) = query.respond(input, &mut devices) {
                    shard.absorb(report);
                }
            }
            shard
        })
        .reduce_with(|mut left, right| {
            left.merge(right);
            left
        });
    release_merged(round, shards, seed)
}

/// The release of the round's aggregator, whose coins are [`aggregator_coins`], after it
/// merged the chunks' merged aggregators `shards` (none for no clients).
fn release_merged<P: RoundProtocol>(
    round: &P,
    shards: Option<P::Aggregator>,
    seed: u64,
) -> P::Release {
    let mut aggregator = round.aggregator(aggregator_coins(seed));
    if let Some(shards) = shards {
        aggregator.merge(shards);
    }
    aggregator.release()
}

/// Runs the domain round `round` over the clients, `counts[j]` of them holding element `j`,
/// with randomness from `seed`, and returns every element's estimate: the estimates of
/// [`run_counted_round`]'s release.
pub fn run_domain_round<P>(round: &P, counts: &[u64], seed: u64) -> Vec<f64>
where
    P: DomainRound<Query: Sync, Aggregator: Send> + Sync,
{
    P::estimates(run_counted_round(round, counts, seed))
}

/// Runs the round `round` over the clients, `counts[j]` of them holding element `j`, with
/// randomness from `seed`, and returns its release.
///
/// Where the round declares it can draw its aggregate from the counts alone
/// ([`CountedRound::aggregate_counts`]), it does so with coins from the first device-coin
/// stream, and the aggregate is merged into the aggregator of [`aggregator_coins`], which
/// releases. Otherwise every client answers as in [`run_round`], the clients taken in the
/// canonical order of their elements (element 0's holders, then element 1's, …) and split into
/// the same chunks, each chunk's elements read off the counts as it runs: memory holds the
/// counts and one aggregator per chunk in flight, never one element per client.
///
/// `counts` has one entry per element of the round's domain: a round that draws its aggregate
/// from the counts panics otherwise, and on the clients' path the holders of an element
/// outside the domain abstain, as the query has them.
pub fn run_counted_round<P>(round: &P, counts: &[u64], seed: u64) -> P::Release
where
    P: CountedRound<Query: Sync, Aggregator: Send> + Sync,
{
    let mut devices = stream(seed, Purpose::DeviceCoins, 0);
    match round.aggregate_counts(counts, &mut devices) {
        Some(answered) => release_merged(round, Some(answered), seed),
        None => run_counted_clients(round, counts, seed),
    }
}

/// [`run_round`] over the clients holding `counts[j]` copies of element `j`, in the order of
/// their elements, without listing them.
fn run_counted_clients<P>(round: &P, counts: &[u64], seed: u64) -> P::Release
where
    P: CountedRound<Query: Sync, Aggregator: Send> + Sync,
{
    // `ends[j]`: one past the last client holding element `j`.
    let ends: Vec<u64> = counts
        .iter()
        .scan(0_u64, |total, &count| {
            *total += count;
            Some(*total)
        })
        .collect();
    let clients = ends.last().copied().unwrap_or(0);
    // Unwrap safety: a population held in memory has fewer than 2^64 / 2 clients per chunk.
    let clients = usize::try_from(clients).expect("a client count fits in usize");
    let per_chunk = clients_per_chunk(clients);
    let query = round.query();
    let shards = (0..clients.div_ceil(per_chunk))
        .into_par_iter()
        .map(|chunk| {
            let index = chunk as u64;
            let mut devices = stream(seed, Purpose::DeviceCoins, index);
            let shard_coins = ChaCha20Rng::from_rng(&mut stream(seed, Purpose::ShardCoins, index));
            let mut shard = round.aggregator(shard_coins);
            let mut client = (chunk * per_chunk) as u64;
            let end = (client + per_chunk as u64).min(clients as u64);
            // The element of the chunk's first client: the first whose holders end past it.
            let mut element = ends.partition_point(|&stop| stop <= client);
            while client < end {
                let stop = ends[element].min(end);
                // Unwrap safety: an element's index is below the domain size, a u32.
                let input = u32::try_from(element).expect("an element of the domain");
                for _ in client..stop {
                    if let Some(report) = query.respond(&input, &mut devices) {
                        shard.absorb(report);
                    }
                }
                client = stop;
                element += 1;
            }
            shard
        })
        .reduce_with(|mut left, right| {
            left.merge(right);
            left
        });
    release_merged(round, shards, seed)
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_core::histogram::{DomainMap, LaplaceHistogram};
    use tally_core::ldp::Grr;
    use tally_core::protocol::LocalHistogramRound;

    use super::*;

    /// The executor's release is one aggregator's that absorbed every report and was given
    /// the seeded aggregator coins, whatever the number of threads.
    #[test]
    fn releases_what_one_seeded_aggregator_releases_on_any_threads() {
        let laplace = LaplaceHistogram::new(8, 1.0, Neighbours::AddRemove).unwrap();
        let round = laplace.round(DomainMap::Integers(8)).unwrap();
        let inputs: Vec<u32> = (0..200_000_u32).map(|i| (i % 7) * (i % 3) % 8).collect();
        let mut whole = round.aggregator(aggregator_coins(3));
        for &x in &inputs {
            whole.absorb(x);
        }
        let expected = whole.release();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| run_round(&round, &inputs, 3)), expected);
        }
        assert_ne!(run_round(&round, &inputs, 4), expected);
        // Drawn from the counts, a central round releases the same, byte for byte.
        let mut counts = vec![0; 8];
        for &x in &inputs {
            counts[x as usize] += 1;
        }
        assert_eq!(run_domain_round(&round, &counts, 3), expected.estimates());
    }

    /// Without a way to draw its aggregate from the counts, a round's devices answer in the
    /// order of their elements: the release is [`run_round`]'s over the elements so listed,
    /// byte for byte, on any number of threads, and across chunks that start inside an
    /// element's holders and elements nobody holds.
    #[test]
    fn counted_clients_answer_as_the_listed_elements_would() {
        let round =
            LocalHistogramRound::new(DomainMap::Integers(6), Grr::new(6, 1.0).unwrap()).unwrap();
        let counts = [70_000, 0, 3, 0, 41_000, 1];
        let listed: Vec<u32> = (0..)
            .zip(counts)
            .flat_map(|(element, count)| std::iter::repeat_n(element, count))
            .collect();
        let counts = counts.map(|count| count as u64);
        let expected = LocalHistogramRound::<Grr>::estimates(run_round(&round, &listed, 9));
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let released = pool.install(|| run_domain_round(&round, &counts, 9));
            assert_eq!(released, expected, "{threads} threads");
        }
        assert_ne!(run_domain_round(&round, &counts, 10), expected);
        assert!(
            run_domain_round(&round, &[0; 6], 9)
                .iter()
                .all(|&e| e == 0.0)
        );
    }
}
