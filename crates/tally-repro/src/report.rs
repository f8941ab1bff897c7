//! Markdown reports: headings, paragraphs, figures, settings and tables, and a table of a
//! paper's findings with the verdict the data gives for each.

use std::fmt;
use std::fmt::Write as _;
use std::path::Path;

use crate::Error;

/// What the data say about one of a paper's claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The claim holds on every setting it covers.
    Holds,
    /// At least one setting the claim covers contradicts it.
    DoesNotHold,
    /// The run's grid lacks the settings the claim is about (for example a reduced grid).
    NotTested,
}

impl Verdict {
    /// [`Verdict::Holds`] if `holds`, else [`Verdict::DoesNotHold`].
    pub fn from_bool(holds: bool) -> Self {
        if holds {
            Self::Holds
        } else {
            Self::DoesNotHold
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Holds => "holds",
            Self::DoesNotHold => "does not hold",
            Self::NotTested => "not tested",
        })
    }
}

/// One of a paper's stated findings, evaluated from the data.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The claim as tested, stated precisely.
    pub claim: String,
    /// Where the paper states it (for example `§5, Figure 1`).
    pub source: String,
    /// The verdict computed from the data.
    pub verdict: Verdict,
    /// The numbers behind the verdict.
    pub evidence: String,
}

/// A markdown document under construction.
#[derive(Clone, Debug, Default)]
pub struct Markdown {
    text: String,
}

impl Markdown {
    /// A document starting with a level-1 `title`.
    pub fn new(title: &str) -> Self {
        let mut doc = Self::default();
        doc.heading(1, title);
        doc
    }

    /// Appends a heading of `level` (1 to 6).
    pub fn heading(&mut self, level: usize, text: &str) -> &mut Self {
        let _ = writeln!(self.text, "{} {text}\n", "#".repeat(level.clamp(1, 6)));
        self
    }

    /// Appends a paragraph.
    pub fn paragraph(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.text, "{}\n", text.trim_end());
        self
    }

    /// Appends a bulleted list.
    pub fn bullets<I, S>(&mut self, items: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for item in items {
            let _ = writeln!(self.text, "- {}", item.as_ref());
        }
        self.text.push('\n');
        self
    }

    /// Appends an image; `path` is relative to the report's directory.
    pub fn image(&mut self, alt: &str, path: &str) -> &mut Self {
        let _ = writeln!(self.text, "![{alt}]({path})\n");
        self
    }

    /// Appends a table. Pipes in cells are escaped.
    pub fn table<S: AsRef<str>>(&mut self, headers: &[&str], rows: &[Vec<S>]) -> &mut Self {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let _ = writeln!(self.text, "| {} |", headers.join(" | "));
        let _ = writeln!(self.text, "|{}", " --- |".repeat(headers.len()));
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| cell(c.as_ref())).collect();
            let _ = writeln!(self.text, "| {} |", cells.join(" | "));
        }
        self.text.push('\n');
        self
    }

    /// Appends the findings as a table: claim, source, verdict and evidence.
    pub fn findings(&mut self, findings: &[Finding]) -> &mut Self {
        let rows: Vec<Vec<String>> = findings
            .iter()
            .enumerate()
            .map(|(i, f)| {
                vec![
                    (i + 1).to_string(),
                    f.claim.clone(),
                    f.source.clone(),
                    format!("**{}**", f.verdict),
                    f.evidence.clone(),
                ]
            })
            .collect();
        self.table(&["#", "claim", "source", "verdict", "evidence"], &rows)
    }

    /// The document so far.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Writes the document to `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, &self.text).map_err(Error::io(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_markdown() {
        let mut doc = Markdown::new("Title");
        doc.paragraph("Some text.")
            .image("fig", "fig.png")
            .table(&["a", "b"], &[vec!["1", "x|y"]])
            .findings(&[Finding {
                claim: "c".into(),
                source: "§5".into(),
                verdict: Verdict::from_bool(true),
                evidence: "e".into(),
            }]);
        let text = doc.as_str();
        assert!(text.starts_with("# Title\n"));
        assert!(text.contains("![fig](fig.png)"));
        assert!(text.contains("| 1 | x\\|y |"));
        assert!(text.contains("| 1 | c | §5 | **holds** | e |"));
    }
}
