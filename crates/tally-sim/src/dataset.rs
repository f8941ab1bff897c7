//! Datasets shipped inside the binary, so that `tally` runs from any directory with no download.
//!
//! The data and its sources, licences and attribution are described in `data/README.md` at
//! the root of the repository.

use std::io::BufReader;

use flate2::read::MultiGzDecoder;

use crate::Error;
use crate::load::read_tsv;
use crate::population::{ClientMode, Population, Source};

/// The names of the shipped datasets.
pub const DATASETS: &[&str] = &["shakespeare"];

/// `client_id<TAB>word`, one row per spoken word token of 38 Shakespeare plays, with the
/// speaking role (`play:SPEAKER`) as client id: 835,229 rows, 1,419 client ids, 25,227 words.
const SHAKESPEARE_FILE: &str = "shakespeare_speakers.tsv.gz";
const SHAKESPEARE: &[u8] = include_bytes!("../../../data/shakespeare/shakespeare_speakers.tsv.gz");

impl Population {
    /// Loads a shipped dataset by name with its natural client formation.
    ///
    /// - `shakespeare`: the dialogue of 38 Shakespeare plays, one client per spoken word token
    ///   (every row of `shakespeare_speakers.tsv.gz` is a client: 835,229 clients holding
    ///   25,227 distinct words; `the` is held by 27,586).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDataset`] listing the known names.
    pub fn dataset(name: &str) -> Result<Self, Error> {
        Self::dataset_with_mode(name, ClientMode::RowsAsClients)
    }

    /// Loads a shipped dataset with clients formed as `mode` says; for `shakespeare`,
    /// [`ClientMode::ClientLevel`] gives 1,419 clients (speaking roles), each holding one word
    /// drawn uniformly from its tokens.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownDataset`] listing the known names.
    pub fn dataset_with_mode(name: &str, mode: ClientMode) -> Result<Self, Error> {
        let (name, file, bytes) = match name {
            "shakespeare" => (DATASETS[0], SHAKESPEARE_FILE, SHAKESPEARE),
            _ => {
                return Err(Error::UnknownDataset {
                    name: name.to_owned(),
                    known: DATASETS.join(", "),
                });
            }
        };
        let reader = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(bytes));
        let tsv = read_tsv(reader, file, mode)?;
        let source = Source::Dataset {
            name,
            file,
            rows: tsv.rows,
            client_ids: tsv.client_ids,
            mode,
        };
        Ok(Self::from_parts(tsv.items, tsv.names, source))
    }
}
