//! `tally sampling-key`, and reading the key of keyed sampling from `--sampling-key` or
//! `--sampling-key-file`.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use tally_core::sampling::SamplingKey;

use crate::cli::{SamplingKeyArgs, SamplingKeyGenerateArgs};
use crate::output::open_owner_only;

impl SamplingKeyArgs {
    /// Whether a key was given, in either form.
    pub(crate) fn given(&self) -> bool {
        self.sampling_key.is_some() || self.sampling_key_file.is_some()
    }

    /// The key given, if any: at least 32 hexadecimal digits
    /// ([`SamplingKey::from_hex_text`]).
    ///
    /// # Errors
    ///
    /// If the file cannot be read or the key is too short or not hexadecimal.
    pub(crate) fn key(&self) -> Result<Option<SamplingKey>> {
        if let Some(path) = &self.sampling_key_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading --sampling-key-file {}", path.display()))?;
            let key = SamplingKey::from_hex_text(text.trim_end_matches(['\n', '\r']))
                .with_context(|| format!("in --sampling-key-file {}", path.display()))?;
            return Ok(Some(key));
        }
        self.sampling_key
            .as_deref()
            .map(|text| SamplingKey::from_hex_text(text).context("in --sampling-key"))
            .transpose()
    }
}

/// Writes a fresh key to `args.output`, readable by its owner alone.
///
/// # Errors
///
/// If the file exists or cannot be written.
pub(crate) fn run(args: &SamplingKeyGenerateArgs) -> Result<()> {
    let text = SamplingKey::generate_hex_text(&mut rand::rng());
    let mut file = open_owner_only(&args.output, true).with_context(|| {
        format!(
            "creating {} (an existing key file is never replaced: remove it or choose another \
             path)",
            args.output.display()
        )
    })?;
    writeln!(file, "{text}").with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "wrote a 256-bit sampling key to {}; pass it with --sampling-key-file and keep it secret",
        args.output.display()
    );
    Ok(())
}
