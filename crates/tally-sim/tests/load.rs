//! Loading populations: the file formats, their errors and the shipped dataset.

#[path = "support/stats.rs"]
mod stats;

use std::io::Write;
use std::path::{Path, PathBuf};

use tally_sim::{ClientMode, DATASETS, Error, Population, Source};

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("tally-sim-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn write_gz(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        self.write(name, &encoder.finish().unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn names(p: &Population) -> Vec<String> {
    p.items()
        .iter()
        .map(|&id| p.item_name(id).unwrap().into_owned())
        .collect()
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn lines_one_client_per_line_skipping_blank_lines_and_crs() {
    let dir = Scratch::new("lines");
    let path = dir.write(
        "items.txt",
        "\u{feff}apple\r\nbanana\n\n  \napple\ncherry pie \r\nbanana".as_bytes(),
    );
    let p = Population::from_lines_file(&path).unwrap();
    assert_eq!(
        names(&p),
        ["apple", "banana", "apple", "cherry pie ", "banana"]
    );
    assert_eq!(p.len(), 5);
    assert_eq!(p.domain_size(), 3);
    assert_eq!(p.true_count(p.item_id("apple").unwrap()), 2);
    assert_eq!(p.true_count(p.item_id("cherry pie ").unwrap()), 1);
    assert_eq!(p.item_id("cherry pie"), None);
    assert_eq!(p.true_counts().iter().sum::<u64>(), 5);
    assert_eq!(
        p.description(),
        format!("5 clients, one per non-blank line of {}", shown(&path))
    );
    assert_eq!(p.source(), &Source::Lines { file: shown(&path) });
}

#[test]
fn gzip_files_are_decompressed() {
    let dir = Scratch::new("gzip");
    let lines = dir.write_gz("items.txt.gz", b"x\ny\nx\n");
    let p = Population::from_lines_file(&lines).unwrap();
    assert_eq!(names(&p), ["x", "y", "x"]);
    let tsv = dir.write_gz("rows.tsv.gz", b"client_id\titem\nc1\tx\nc2\ty\n");
    let p = Population::from_tsv_file(&tsv, ClientMode::RowsAsClients).unwrap();
    assert_eq!(names(&p), ["x", "y"]);
    // A file not ending in .gz is read as it is.
    let raw = dir.write_gz("items.txt", b"x\n");
    assert!(matches!(
        Population::from_lines_file(&raw),
        Err(Error::NotUtf8 { line: 1, .. })
    ));
}

#[test]
fn corrupt_gzip_is_a_read_error() {
    let dir = Scratch::new("corrupt");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&b"word\n".repeat(10_000)).unwrap();
    let mut bytes = encoder.finish().unwrap();
    let n = bytes.len();
    bytes.truncate(n / 2);
    let path = dir.write("cut.txt.gz", &bytes);
    let err = Population::from_lines_file(&path).unwrap_err();
    assert!(matches!(err, Error::Read { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!("{}:", shown(&path))),
        "{err}"
    );
}

#[test]
fn missing_file_names_the_path() {
    let dir = Scratch::new("missing");
    let path = dir.0.join("no-such-file.txt");
    let err = Population::from_lines_file(&path).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("cannot open {}: file not found", shown(&path))
    );
    let err = Population::from_tsv_file(&path, ClientMode::RowsAsClients).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    // A directory cannot be read as a file.
    let err = Population::from_lines_file(&dir.0).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains(&shown(&dir.0)), "{err}");
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let dir = Scratch::new("utf8");
    let path = dir.write("bad.txt", b"fine\n\nok\xff\xfe\nlater\n");
    let err = Population::from_lines_file(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:3: line is not valid UTF-8", shown(&path))
    );
    let path = dir.write("bad.tsv", b"client_id\titem\nc\tx\nc\t\xc3\n");
    let err = Population::from_tsv_file(&path, ClientMode::RowsAsClients).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:3: line is not valid UTF-8", shown(&path))
    );
}

#[test]
fn malformed_tsv_rows_name_file_and_line() {
    let dir = Scratch::new("malformed");
    let cases: [(&[u8], u64, &str); 5] = [
        (b"c1\tx\nno tab here\n", 2, "a line with no tab"),
        (b"c1\tx\n\nc2\ty\tz\n", 3, "a row with more than two fields"),
        (b"\tx\n", 1, "an empty client_id"),
        (b"c1\tx\r\nc2\t\r\n", 2, "an empty item"),
        // `client_id` is only a header on the first row.
        (b"c1\tx\nclient_id\n", 2, "a line with no tab"),
    ];
    for (i, (bytes, line, found)) in cases.into_iter().enumerate() {
        let path = dir.write(&format!("case{i}.tsv"), bytes);
        for mode in [
            ClientMode::RowsAsClients,
            ClientMode::ClientLevel { seed: 1 },
        ] {
            let err = Population::from_tsv_file(&path, mode).unwrap_err();
            assert!(
                matches!(err, Error::MalformedRow { line: l, .. } if l == line),
                "{err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "{}:{line}: expected client_id<TAB>item, found {found}",
                    shown(&path)
                )
            );
        }
    }
}

#[test]
fn empty_inputs_are_errors() {
    let dir = Scratch::new("empty");
    for (name, bytes) in [("empty.txt", &b""[..]), ("blank.txt", b"\n \r\n\t\n")] {
        let path = dir.write(name, bytes);
        let err = Population::from_lines_file(&path).unwrap_err();
        assert!(matches!(err, Error::Empty { .. }), "{err:?}");
        assert!(err.to_string().starts_with(&shown(&path)), "{err}");
        assert!(err.to_string().contains("no clients"), "{err}");
    }
    for (name, bytes) in [
        ("empty.tsv", &b""[..]),
        ("header.tsv", b"client_id\titem\n\n"),
    ] {
        let path = dir.write(name, bytes);
        for mode in [
            ClientMode::RowsAsClients,
            ClientMode::ClientLevel { seed: 0 },
        ] {
            let err = Population::from_tsv_file(&path, mode).unwrap_err();
            assert!(matches!(err, Error::Empty { .. }), "{err:?}");
        }
    }
}

#[test]
fn tsv_rows_as_clients_and_header() {
    let dir = Scratch::new("rows");
    let path = dir.write("rows.tsv", b"client_id\tword\na\tx\nb\ty\na\tz\n\na\tx\n");
    let p = Population::from_tsv_file(&path, ClientMode::RowsAsClients).unwrap();
    assert_eq!(names(&p), ["x", "y", "z", "x"]);
    assert_eq!(
        p.description(),
        format!(
            "4 clients, one per row of {} (rows as clients: the guarantee protects one row, not \
             one of the 2 client_ids)",
            shown(&path)
        )
    );
    // Without a header the first row is data.
    let path = dir.write("nohead.tsv", b"a\tx\nb\ty\n");
    let p = Population::from_tsv_file(&path, ClientMode::RowsAsClients).unwrap();
    assert_eq!(names(&p), ["x", "y"]);
}

#[test]
fn tsv_client_level_is_one_item_per_client_deterministically() {
    let dir = Scratch::new("client-level");
    // Clients in order of first appearance: b, a, c.
    let path = dir.write(
        "rows.tsv",
        b"client_id\titem\nb\tq\na\tx\nb\tr\nc\tz\na\ty\nb\ts\n",
    );
    let mode = ClientMode::ClientLevel { seed: 42 };
    let p = Population::from_tsv_file(&path, mode).unwrap();
    assert_eq!(p.len(), 3);
    let got = names(&p);
    assert!(["q", "r", "s"].contains(&got[0].as_str()), "{got:?}");
    assert!(["x", "y"].contains(&got[1].as_str()), "{got:?}");
    assert_eq!(got[2], "z");
    // Only items some client holds are in the vocabulary.
    assert_eq!(p.domain_size(), 3);
    assert!(p.item_counts().iter().all(|&(_, c)| c > 0));
    assert_eq!(
        names(&Population::from_tsv_file(&path, mode).unwrap()),
        got,
        "same seed, same clients"
    );
    assert_eq!(
        p.description(),
        format!(
            "3 clients, one per client_id of {} (6 rows), each holding one item chosen \
             uniformly from its rows with seed 42 (client-level)",
            shown(&path)
        )
    );
    assert!(matches!(
        p.source(),
        Source::Tsv {
            rows: 6,
            client_ids: 3,
            ..
        }
    ));
    // Some seed picks differently.
    assert!((0..64).any(|seed| {
        names(&Population::from_tsv_file(&path, ClientMode::ClientLevel { seed }).unwrap()) != got
    }));
}

#[test]
fn stat_client_level_choice_is_uniform_over_rows() {
    // Client c has rows a, b, b, c: its item is a, b, c with probability 1/4, 1/2, 1/4.
    let bytes = b"c\ta\nd\tz\nc\tb\nc\tb\nc\tc\n";
    let mut counts = [0u64; 3];
    for seed in 0..4_000 {
        let p = Population::from_tsv_reader(&bytes[..], "mem", ClientMode::ClientLevel { seed })
            .unwrap();
        let name = p.item_name(p.items()[0]).unwrap();
        counts[(name.as_bytes()[0] - b'a') as usize] += 1;
        assert_eq!(p.item_name(p.items()[1]).unwrap(), "z");
    }
    stats::assert_fits("client-level choice", &counts, &[0.25, 0.5, 0.25]);
}

/// The shipped word counts: `word<TAB>count` with a header.
fn shipped_word_counts() -> Vec<(String, u64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/shakespeare/shakespeare_word_counts_dialogue.tsv");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let (word, count) = line.split_once('\t').unwrap();
            (word.to_owned(), count.parse().unwrap())
        })
        .collect()
}

#[test]
fn shakespeare_dataset_matches_the_shipped_counts() {
    let p = Population::dataset("shakespeare").unwrap();
    assert_eq!(p.len(), 835_229);
    assert_eq!(p.domain_size(), 25_227);
    let the = p.item_id("the").unwrap();
    assert_eq!(p.item_name(the).unwrap(), "the");
    assert_eq!(p.true_count(the), 27_586);
    let counts = shipped_word_counts();
    assert_eq!(counts.len(), 25_227);
    for (word, count) in &counts {
        let id = p.item_id(word).unwrap_or_else(|| panic!("{word} missing"));
        assert_eq!(p.true_count(id), *count, "{word}");
    }
    assert_eq!(
        p.description(),
        "dataset shakespeare: 835229 clients, one per row of shakespeare_speakers.tsv.gz \
         (rows as clients: the guarantee protects one row, not one of the 1419 client_ids)"
    );
    assert!(DATASETS.contains(&"shakespeare"));
}

#[test]
fn shakespeare_file_on_disk_loads_like_the_embedded_copy() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/shakespeare/shakespeare_speakers.tsv.gz");
    let mode = ClientMode::ClientLevel { seed: 5 };
    let from_file = Population::from_tsv_file(&path, mode).unwrap();
    let embedded = Population::dataset_with_mode("shakespeare", mode).unwrap();
    assert_eq!(from_file.len(), 1_419);
    assert_eq!(names(&from_file), names(&embedded));
    assert!(
        embedded
            .description()
            .starts_with("dataset shakespeare: 1419 clients, one per client_id of"),
        "{}",
        embedded.description()
    );
    assert!(embedded.domain_size() <= 1_419);
}

#[test]
fn unknown_dataset_lists_the_known_ones() {
    let err = Population::dataset("hamlet").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown dataset \"hamlet\": known datasets are shakespeare"
    );
}
