//! The device side of tally's federated protocol, and a fleet of simulated devices.
//!
//! * [`Client`]: every endpoint of the protocol (tally-messages) over one connection pool,
//!   with retries, exponential backoff and jitter in one place.
//! * [`Responder`]: a device's answer to a round's query from its local item, computed by
//!   the same tally-core code the simulator runs; the raw item never leaves the device
//!   except as the report.
//! * [`Fleet`]: many simulated devices over real HTTP, measuring uploads per second and
//!   latency percentiles.
//! * [`DeviceLedger`]: the device's own privacy budget, refusing a task whose guarantee would
//!   take it past the budget, whatever the server asks.
//! * [`AggregatorKey`]: in a split-trust population, the aggregator's key, fetched from the
//!   aggregator itself or pinned, that a device seals each message of its report to before it
//!   uploads them to the relay ([`Client::upload_sealed`]).
//!
//! # Example
//!
//! One device taking part in every open round:
//!
//! ```no_run
//! use tally_client::{Client, Responder, device_rng};
//! use tally_messages::Upload;
//!
//! # async fn device() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::new("http://127.0.0.1:8080")?;
//! let mut rng = device_rng(None);
//! for round in client.open_rounds().await? {
//!     let responder = Responder::new(&round)?;
//!     let grant = client.check_in(&round.round_id, 1).await?;
//!     let uploads: Vec<Upload> = grant
//!         .tokens
//!         .into_iter()
//!         .map(|token| Upload {
//!             token,
//!             report: responder.respond_with_rng("my item", &mut rng),
//!         })
//!         .collect();
//!     client.upload(&round.round_id, &uploads).await?;
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod client;
mod error;
pub mod fleet;
pub mod ledger;
pub mod respond;
pub mod seal;

pub use client::{Client, RetryPolicy};
pub use error::ClientError;
pub use fleet::{Fleet, FleetConfig, FleetError, FleetEvent, FleetReport};
pub use ledger::{DeviceLedger, LedgerRefusal};
pub use respond::{RespondError, Responder, device_rng};
pub use seal::{AggregatorKey, RoundSealer};
