//! Any registered task kind run as the server runs it: [`run_task`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use tally_messages::TaskSpec;
use tally_protocol::{AskResponder, Engine, draw_public_coins};

use crate::Error;
use crate::rng::{Purpose, round_seed, stream};
use crate::round::clients_per_chunk;

/// Runs the task `spec` asks for, of any kind the registry defines, over devices holding
/// `inputs` (one each, its data as the text a device reads: its item, word or number), as
/// the server runs it, and returns the document the finished task publishes.
///
/// Each round is the engine's ([`Engine::open`]): every device answers the round's ask through
/// the responder a device runs ([`AskResponder`]), abstaining where its report would be longer
/// than `spec.rounds.max_report_bytes`; the devices are split into the chunks of
/// [`crate::run_round`] and chunk `k` flips its coins from stream `k` of the round's own
/// seed; the reports are counted, in the devices' order, by the round's aggregator, whose
/// coins are the next stream of a `ChaCha20Rng` seeded with `seed`: the coins a server
/// started with `Server::start_seeded(seed)` gives its rounds, in order. Every device uploads
/// in every round (the cohort target plays no part). A kind whose mechanism publishes public
/// coins and whose spec names none draws them from `seed`, as the server draws a new task's.
///
/// # Privacy
///
/// The release carries the guarantee the engine computes for `spec`, as on the server, only
/// while `seed` is secret: whoever knows it knows every coin and noise draw of the run. Run
/// it on proxy data to tune a task, not to release a statistic of private data.
///
/// # Errors
///
/// [`Error::Task`] if the engine refuses `spec`, a round gets fewer uploads than
/// `spec.rounds.min_cohort` (the server would not release it), or a round's aggregator refuses
/// a report; [`Error::Device`] if a device's data cannot answer a round (a word in a round
/// over numbers).
pub fn run_task<I: AsRef<str> + Sync>(
    spec: &TaskSpec,
    inputs: &[I],
    seed: u64,
) -> Result<String, Error> {
    let mut spec = spec.clone();
    let mut public_coins = stream(seed, Purpose::PublicCoins, 0);
    draw_public_coins(&mut spec.kind, || public_coins.next_u64());
    let spec = &spec;
    let (mut engine, _) = Engine::build(spec).map_err(Error::Task)?;
    let uploads = inputs.len() as u64;
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
        let opened = engine.open(spec.sampling, ChaCha20Rng::from_rng(&mut coins));
        let responder = opened
            .ask
            .responder(spec.sampling)
            .map_err(|e| Error::Task(format!("round {round}: {e}")))?;
        if let Some(index) = inputs.iter().position(|i| !responder.accepts(i.as_ref())) {
            return Err(Error::Device {
                device: index as u64 + 1,
                round,
                data: inputs[index].as_ref().to_owned(),
            });
        }
        let devices_seed = round_seed(seed, round);
        let reports: Vec<Vec<String>> = inputs
            .par_chunks(clients_per_chunk(inputs.len()))
            .enumerate()
            .map(|(chunk, clients)| {
                let mut devices = stream(devices_seed, Purpose::DeviceCoins, chunk as u64);
                clients
                    .iter()
                    .filter_map(|i| responder.respond(i.as_ref(), max_bytes, &mut devices))
                    .collect()
            })
            .collect();
        let mut aggregator = opened.aggregator;
        for report in reports.into_iter().flatten() {
            aggregator
                .absorb(report)
                .map_err(|e| Error::Task(format!("round {round}: {e}")))?;
        }
        engine
            .observe(aggregator.release())
            .map_err(|e| Error::Task(format!("round {round}: {e}")))?;
    }
    Ok(engine.document(spec))
}
