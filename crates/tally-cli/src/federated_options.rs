//! The options of `tally task create` that apply to some task kinds only, and the refusal of
//! one given to a kind it does not apply to.

use anyhow::{Result, bail};

use crate::cli::TaskCreateArgs;

/// The levels of a multi-round task when `--levels` is not given.
pub(crate) const DEFAULT_LEVELS: u32 = 10;

/// An option of `task create` and whether it was given.
pub(crate) type GivenOption = (&'static str, fn(&TaskCreateArgs) -> bool);

/// The options of TrieHH++'s prefix tree.
pub(crate) const PREFIX_OPTIONS: [GivenOption; 2] = [
    ("--segment", |a| a.segment.is_some()),
    ("--unrestricted", |a| a.unrestricted),
];

/// Refuses the first of `options` that was given: it does not apply to `kind`.
pub(crate) fn refuse_options(
    args: &TaskCreateArgs,
    options: &[GivenOption],
    kind: &str,
) -> Result<()> {
    if let Some((name, _)) = options.iter().find(|(_, given)| given(args)) {
        bail!("{name} does not apply to {kind}");
    }
    Ok(())
}
