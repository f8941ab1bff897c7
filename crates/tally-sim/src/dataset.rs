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

/// `rank<TAB>word<TAB>centibels<TAB>frequency`: the 10,000 most frequent English words of
/// wordfreq 3.1.1 (CC BY-SA 4.0), with a header.
const WORDFREQ: &str = include_str!("../../../data/wordfreq/wordfreq_en_top10000.tsv");

/// The shipped English word list (`wordfreq_en_top10000.tsv`, CC BY-SA 4.0, see
/// `data/README.md`): `(word, frequency)` for its entries made only of lowercase ASCII letters
/// with optional internal apostrophes (9,919 of the 10,000), by decreasing frequency.
pub fn english_word_frequencies() -> Vec<(&'static str, f64)> {
    WORDFREQ
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let word = fields.nth(1)?;
            let frequency: f64 = fields.nth(1)?.parse().ok()?;
            let is_word = word
                .split('\'')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase()));
            is_word.then_some((word, frequency))
        })
        .collect()
}

/// The name, file name and gzip bytes of a shipped dataset.
pub(crate) fn shipped(name: &str) -> Result<(&'static str, &'static str, &'static [u8]), Error> {
    match name {
        "shakespeare" => Ok((DATASETS[0], SHAKESPEARE_FILE, SHAKESPEARE)),
        _ => Err(Error::UnknownDataset {
            name: name.to_owned(),
            known: DATASETS.join(", "),
        }),
    }
}

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
        let (name, file, bytes) = shipped(name)?;
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
