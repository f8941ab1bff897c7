//! The local frequency oracles as [`DomainHistogram`]s: every client randomizes its own item,
//! the server absorbs the reports and debiases.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::Guarantee;

use super::{Grr, HadamardResponse, Olh, UnaryRandomizer, UnaryVariant};
use crate::histogram::{DomainHistogram, MessageCost, count_items};
use crate::parallel::fold_chunks;

/// The bits needed to name one of `values` values.
fn bits_for(values: u64) -> u64 {
    u64::from(values.next_power_of_two().trailing_zeros()).max(1)
}

/// One message per client, naming one of `values` values.
fn one_message(values: u64) -> Option<MessageCost> {
    Some(MessageCost {
        messages_per_client: 1.0,
        bits_per_message: bits_for(values),
    })
}

/// Runs the clients in parallel chunks into per-thread aggregators (made by `aggregator`, fed
/// one randomized item at a time by `absorb`) and merges them; aggregators add integer counts,
/// so the result does not depend on the number of threads.
fn run_clients<A: Send>(
    items: &[u32],
    rng: &mut dyn Rng,
    aggregator: impl Fn() -> A + Sync + Send,
    absorb: impl Fn(&mut A, u32, &mut ChaCha20Rng) + Sync + Send,
    merge: impl Fn(&mut A, A) + Sync + Send,
) -> A {
    fold_chunks(
        items,
        rng,
        aggregator,
        |part, clients, stream| {
            for &item in clients {
                absorb(part, item, stream);
            }
        },
        |mut a, b| {
            merge(&mut a, b);
            a
        },
    )
}

/// The report was produced by the same randomizer, so the aggregator accepts it.
const OWN_REPORT: &str = "a report of this randomizer is in its domain";

impl DomainHistogram for Grr {
    fn name(&self) -> &'static str {
        "grr"
    }

    fn domain(&self) -> u32 {
        Grr::domain(self)
    }

    fn guarantee(&self) -> Guarantee {
        Grr::guarantee(self)
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(Grr::guarantee(self))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        one_message(u64::from(Grr::domain(self)))
    }

    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        run_clients(
            items,
            rng,
            || self.aggregator(),
            |a, x, rng| a.absorb(self.randomize(x, rng)).expect(OWN_REPORT),
            |a, b| a.merge(b),
        )
        .estimate()
    }
}

impl DomainHistogram for UnaryRandomizer {
    fn name(&self) -> &'static str {
        match self.variant() {
            UnaryVariant::Symmetric => "sue",
            UnaryVariant::Optimized => "oue",
        }
    }

    fn domain(&self) -> u32 {
        UnaryRandomizer::domain(self)
    }

    fn guarantee(&self) -> Guarantee {
        UnaryRandomizer::guarantee(self)
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(UnaryRandomizer::guarantee(self))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: u64::from(UnaryRandomizer::domain(self)),
        })
    }

    /// Simulated through [`UnaryRandomizer::simulate_aggregate`], which gives the server's
    /// support counts the same law as `n` randomized reports at a fraction of the cost.
    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        let counts = count_items(UnaryRandomizer::domain(self), items);
        self.simulate_aggregate(&counts, rng).estimate()
    }
}

impl DomainHistogram for Olh {
    fn name(&self) -> &'static str {
        "olh"
    }

    fn domain(&self) -> u32 {
        Olh::domain(self)
    }

    fn guarantee(&self) -> Guarantee {
        Olh::guarantee(self)
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(Olh::guarantee(self))
    }

    /// One message: the hash function's two 64-bit coefficients and the value below `g`.
    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: 128 + bits_for(u64::from(self.g())),
        })
    }

    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        run_clients(
            items,
            rng,
            || self.aggregator(),
            |a, x, rng| a.absorb(&self.randomize(x, rng)).expect(OWN_REPORT),
            |a, b| a.merge(b),
        )
        .estimate()
    }
}

impl DomainHistogram for HadamardResponse {
    fn name(&self) -> &'static str {
        "hadamard-response"
    }

    fn domain(&self) -> u32 {
        HadamardResponse::domain(self)
    }

    fn guarantee(&self) -> Guarantee {
        HadamardResponse::guarantee(self)
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(HadamardResponse::guarantee(self))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        one_message(u64::from(self.order()))
    }

    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        run_clients(
            items,
            rng,
            || self.aggregator(),
            |a, x, rng| a.absorb(self.randomize(x, rng)).expect(OWN_REPORT),
            |a, b| a.merge(b),
        )
        .estimate()
    }
}
