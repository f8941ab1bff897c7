//! The local frequency oracles as [`DomainHistogram`]s: every client randomizes its own item,
//! the server absorbs the reports and debiases. Each is the round of its
//! [`LocalRandomizer`](crate::protocol::LocalRandomizer) implementation
//! ([`crate::protocol::LocalHistogramRound`]), which executors run.

use tally_accounting::{ErrorLaw, Guarantee};

use super::{Grr, HadamardResponse, Olh, SubsetSelection, UnaryRandomizer, UnaryVariant};
use crate::histogram::{DomainHistogram, MessageCost};

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

    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.support_probabilities().error_law(clients, count))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        one_message(u64::from(Grr::domain(self)))
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

    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.support_probabilities().error_law(clients, count))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: u64::from(UnaryRandomizer::domain(self)),
        })
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

    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.support_probabilities().error_law(clients, count))
    }

    /// One message: the hash function's two 64-bit coefficients and the value below `g`.
    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: 128 + bits_for(u64::from(self.g())),
        })
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

    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.support_probabilities().error_law(clients, count))
    }

    fn message_cost(&self) -> Option<MessageCost> {
        one_message(u64::from(self.order()))
    }
}

impl DomainHistogram for SubsetSelection {
    fn name(&self) -> &'static str {
        "subset-selection"
    }

    fn domain(&self) -> u32 {
        SubsetSelection::domain(self)
    }

    fn guarantee(&self) -> Guarantee {
        SubsetSelection::guarantee(self)
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(SubsetSelection::guarantee(self))
    }

    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        Some(self.support_probabilities().error_law(clients, count))
    }

    /// One message: `k` ids of the domain.
    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: u64::from(self.size()) * bits_for(u64::from(self.domain())),
        })
    }
}
