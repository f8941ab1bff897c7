//! The streaming S&T round over a file of lines: the same law as the in-memory gap-skipping
//! round on the loaded population, the same input format and errors.

#[path = "support/stats.rs"]
mod stats;

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use statrs::distribution::{Binomial, Discrete};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_sim::{
    ClientMode, ExecutionPath, PoissonLines, Population, StreamFormat, StreamedRelease,
    run_sample_threshold, stream_sample_threshold,
};

fn mechanism(rate: f64, threshold: u64) -> SampleThreshold {
    let params = SampleThresholdParams::new(rate, threshold).unwrap();
    SampleThreshold::new(params, 1.0, Analysis::Tight, Neighbours::AddRemove).unwrap()
}

/// A lines file where item `i{k}` is held by `counts[k]` clients, round robin, with a
/// byte-order mark, `\r\n` endings and blank lines mixed in.
fn write_lines(counts: &[u64]) -> tempfile::NamedTempFile {
    let mut text = String::from("\u{feff}");
    let mut left = counts.to_vec();
    let mut line = 0;
    while left.iter().any(|&c| c > 0) {
        for (i, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                *c -= 1;
                text.push_str(&format!("i{i}"));
                text.push_str(if line % 3 == 0 { "\r\n" } else { "\n" });
                if line % 5 == 0 {
                    text.push_str(" \t\n\n");
                }
                line += 1;
            }
        }
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn no_progress(_: u64) {}

#[test]
fn stat_streaming_has_the_law_of_gap_skipping() {
    // With τ = 2 an item held by c clients shows Bin(c, p) when that is ≥ 2, else nothing.
    let counts = [40u64, 25, 10, 3];
    let file = write_lines(&counts);
    let population = Population::from_lines_file(file.path()).unwrap();
    assert_eq!(population.len() as u64, counts.iter().sum::<u64>());
    let (rate, threshold) = (0.25, 2);
    let st = mechanism(rate, threshold);
    let runs = 2_000u64;
    // observed[0] streaming, observed[1] in memory; [item][value].
    let mut observed: Vec<Vec<Vec<u64>>> = (0..2)
        .map(|_| counts.iter().map(|&c| vec![0; c as usize + 1]).collect())
        .collect();
    for seed in 0..runs {
        let streamed = stream_sample_threshold(
            file.path(),
            StreamFormat::Lines,
            &st,
            &PoissonLines::new(&st, seed),
            &no_progress,
        )
        .unwrap();
        assert_eq!(streamed.clients, population.len() as u64);
        for cell in &streamed.release.items {
            let item: usize = streamed.names[cell.item as usize][1..].parse().unwrap();
            observed[0][item][cell.count as usize] += 1;
        }
        let release = run_sample_threshold(&population, &st, ExecutionPath::GapSkipping, seed);
        for cell in &release.items {
            let name = population.item_name(cell.item).unwrap();
            let item: usize = name[1..].parse().unwrap();
            observed[1][item][cell.count as usize] += 1;
        }
    }
    // Runs releasing nothing for an item count as 0.
    for values in observed.iter_mut().flatten() {
        values[0] = runs - values.iter().sum::<u64>();
    }
    for (i, &c) in counts.iter().enumerate() {
        let bin = Binomial::new(rate, c).unwrap();
        let probs: Vec<f64> = (0..=c)
            .map(|v| match v {
                0 => (0..threshold).map(|u| bin.pmf(u)).sum(),
                v if v < threshold => 0.0,
                v => bin.pmf(v),
            })
            .collect();
        stats::assert_fits(
            &format!("streaming, item held by {c}"),
            &observed[0][i],
            &probs,
        );
        stats::assert_same_distribution(
            &format!("streaming vs gap-skipping, item held by {c}"),
            &observed[0][i],
            &observed[1][i],
        );
    }
}

#[test]
fn streaming_is_deterministic_and_reads_gzip() {
    let counts = [3_000u64, 2_000, 500, 20];
    let file = write_lines(&counts);
    let text = std::fs::read(file.path()).unwrap();
    let gz = tempfile::Builder::new().suffix(".gz").tempfile().unwrap();
    let mut encoder = GzEncoder::new(gz.reopen().unwrap(), Compression::fast());
    encoder.write_all(&text).unwrap();
    encoder.finish().unwrap();
    let st = mechanism(0.5, 5);
    let run = |path: &std::path::Path| {
        let streamed = stream_sample_threshold(
            path,
            StreamFormat::Lines,
            &st,
            &PoissonLines::new(&st, 9),
            &no_progress,
        )
        .unwrap();
        let cells: Vec<(String, u64)> = streamed
            .release
            .items
            .iter()
            .map(|cell| (streamed.names[cell.item as usize].clone(), cell.count))
            .collect();
        (streamed.clients, cells, streamed.description)
    };
    let (clients, cells, description) = run(file.path());
    assert_eq!(clients, 5_520);
    assert!(description.starts_with("5520 clients, one per non-blank line of "));
    assert_eq!(run(file.path()).1, cells);
    assert_eq!(run(gz.path()).1, cells);
    // The common items are released, each once and at or above the threshold, and nothing
    // else is.
    let mut names: Vec<&str> = cells.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    assert!(names == ["i0", "i1", "i2"] || names == ["i0", "i1", "i2", "i3"]);
    assert!(cells.iter().all(|&(_, count)| count >= 5));
}

#[test]
fn streaming_errors_name_the_file_and_line() {
    let st = mechanism(0.5, 5);
    let sampling = PoissonLines::new(&st, 1);
    let mut bad = tempfile::NamedTempFile::new().unwrap();
    bad.write_all(b"a\nb\n\nc\xff\n").unwrap();
    let err = stream_sample_threshold(
        bad.path(),
        StreamFormat::Lines,
        &st,
        &sampling,
        &no_progress,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}:4: line is not valid UTF-8", bad.path().display())
    );
    let mut blank = tempfile::NamedTempFile::new().unwrap();
    blank.write_all(b"\n \r\n\t\n").unwrap();
    let err = stream_sample_threshold(
        blank.path(),
        StreamFormat::Lines,
        &st,
        &sampling,
        &no_progress,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("no clients: the input is empty or holds only blank lines")
    );
    let missing = std::path::Path::new("/nonexistent/tally-input.txt");
    let err = stream_sample_threshold(missing, StreamFormat::Lines, &st, &sampling, &no_progress)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot open /nonexistent/tally-input.txt: file not found"
    );
}

/// A TSV file: client `u{k}` has rows holding `rows[k]`, the clients' rows interleaved, with
/// a header and a blank line.
fn write_tsv(rows: &[&[&str]]) -> tempfile::NamedTempFile {
    let mut text = String::from("client_id\titem\n");
    let longest = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    for i in 0..longest {
        for (client, items) in rows.iter().enumerate() {
            if let Some(item) = items.get(i) {
                text.push_str(&format!("u{client}\t{item}\n"));
            }
        }
        text.push('\n');
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn stat_client_level_streaming_has_the_law_of_loading() {
    // 24 clients: 12 hold only x; 8 hold x, y, y (x with probability 1/3); 4 hold y, z, z, z
    // (y with probability 1/4). Streaming and loading must agree on the law of the released
    // counts of x and y.
    let mut rows: Vec<&[&str]> = vec![&["x"]; 12];
    rows.extend(vec![&["x", "y", "y"][..]; 8]);
    rows.extend(vec![&["y", "z", "z", "z"][..]; 4]);
    let file = write_tsv(&rows);
    let st = mechanism(0.5, 2);
    let runs = 2_000u64;
    // observed[0] streaming, observed[1] loading; [x or y][count].
    let mut observed = vec![vec![vec![0u64; 25]; 2]; 2];
    for seed in 0..runs {
        let mode = ClientMode::ClientLevel { seed };
        let streamed = stream_client_level(file.path(), &st, seed);
        assert_eq!(streamed.clients, 24);
        for cell in &streamed.release.items {
            match streamed.names[cell.item as usize].as_str() {
                "x" => observed[0][0][cell.count as usize] += 1,
                "y" => observed[0][1][cell.count as usize] += 1,
                _ => {}
            }
        }
        let population = Population::from_tsv_file(file.path(), mode).unwrap();
        let release = run_sample_threshold(&population, &st, ExecutionPath::GapSkipping, seed);
        for cell in &release.items {
            match population.item_name(cell.item).unwrap().as_ref() {
                "x" => observed[1][0][cell.count as usize] += 1,
                "y" => observed[1][1][cell.count as usize] += 1,
                _ => {}
            }
        }
    }
    for values in observed.iter_mut().flatten() {
        values[0] = runs - values.iter().sum::<u64>();
    }
    for (i, item) in ["x", "y"].iter().enumerate() {
        stats::assert_same_distribution(
            &format!("client-level streaming vs loading, item {item}"),
            &observed[0][i],
            &observed[1][i],
        );
    }
}

/// The release of `st` streamed from the TSV file at `path`, one row chosen per client, seeded
/// with `seed`.
fn stream_client_level(path: &std::path::Path, st: &SampleThreshold, seed: u64) -> StreamedRelease {
    stream_sample_threshold(
        path,
        StreamFormat::Tsv(ClientMode::ClientLevel { seed }),
        st,
        &PoissonLines::new(st, seed),
        &no_progress,
    )
    .unwrap()
}

/// The released count of `a` in `runs` client-level rounds of `release` (seeded 0..runs),
/// by count.
fn law_of_a(runs: u64, release: impl Fn(u64) -> Option<u64>) -> Vec<u64> {
    let mut law = vec![0u64; 401];
    for seed in 0..runs {
        law[release(seed).map_or(0, |count| count as usize)] += 1;
    }
    law
}

#[test]
fn stat_partitioned_client_level_streaming_is_equal_in_law_to_loading() {
    // 400 clients spread over the client maps: 300 hold a and b (a chosen with probability
    // 1/2), 100 hold b, b, c. a's released count is Bin(300, p/2) (τ = 2 is passed always).
    let mut rows: Vec<&[&str]> = vec![&["a", "b"]; 300];
    rows.extend(vec![&["b", "b", "c"][..]; 100]);
    let file = write_tsv(&rows);
    let streamed = |rate: f64| {
        let st = mechanism(rate, 2);
        law_of_a(2_000, |seed| {
            let release = stream_client_level(file.path(), &st, seed);
            assert_eq!(release.clients, 400);
            release
                .release
                .items
                .iter()
                .find(|cell| release.names[cell.item as usize] == "a")
                .map(|cell| cell.count)
        })
    };
    let st = mechanism(0.5, 2);
    let loaded = law_of_a(2_000, |seed| {
        let population =
            Population::from_tsv_file(file.path(), ClientMode::ClientLevel { seed }).unwrap();
        let release = run_sample_threshold(&population, &st, ExecutionPath::GapSkipping, seed);
        release
            .items
            .iter()
            .find(|cell| population.item_name(cell.item).unwrap().as_ref() == "a")
            .map(|cell| cell.count)
    });
    stats::assert_same_distribution("a, streamed vs loaded", &streamed(0.5), &loaded);
    // The test has power: a sampling rate 10% too high is caught.
    let mutant = streamed(0.55);
    let caught = std::panic::catch_unwind(|| {
        stats::assert_same_distribution("a, mutant vs loaded", &mutant, &loaded);
    });
    assert!(
        caught.is_err(),
        "the mutant's law passed as the loaded one's"
    );
}

#[test]
fn client_level_streaming_reads_gzip_and_long_client_ids() {
    // 500 clients, a third with ids of 16 bytes or more, 1 to 3 rows each (client c's rows
    // are rows c·143 mod 500 plus 0, 500 and 1000, of which those ≡ 0..=c mod 3 are kept).
    let mut text = String::from("client_id\titem\n");
    for row in 0..1_500 {
        let client = row * 7 % 500;
        if row % 3 <= client % 3 {
            let id = if client % 3 == 0 {
                format!("a-long-client-id-{client}")
            } else {
                format!("u{client}")
            };
            text.push_str(&format!("{id}\ti{}\n", (row + client) % 4));
        }
    }
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    let gz = tempfile::Builder::new().suffix(".gz").tempfile().unwrap();
    let mut encoder = GzEncoder::new(gz.reopen().unwrap(), Compression::fast());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap();
    let st = mechanism(0.5, 2);
    let cells = |path: &std::path::Path, seed| {
        let streamed = stream_client_level(path, &st, seed);
        assert_eq!(streamed.clients, 500);
        let mut cells: Vec<(String, u64)> = streamed
            .release
            .items
            .iter()
            .map(|cell| (streamed.names[cell.item as usize].clone(), cell.count))
            .collect();
        cells.sort_unstable();
        cells
    };
    for seed in 0..5 {
        let plain = cells(file.path(), seed);
        assert_eq!(cells(gz.path(), seed), plain);
        // About 250 clients are sampled, over 4 items.
        let sampled: u64 = plain.iter().map(|(_, count)| count).sum();
        assert!((180..320).contains(&sampled), "{sampled}");
    }
}

#[test]
fn rows_as_clients_streaming_samples_each_row() {
    let rows: Vec<&[&str]> = vec![&["a", "a", "b"], &["a"], &["a", "c"]];
    let file = write_tsv(&rows);
    // Each row is a client sampled at rate 0.6: over 200 seeds a, held by 4 rows, shows at
    // most 4 and (but with probability about 1e-12) exactly 4 at least once.
    let st = mechanism(0.6, 1);
    let mut most = [0u64; 3];
    for seed in 0..200 {
        let streamed = stream_sample_threshold(
            file.path(),
            StreamFormat::Tsv(ClientMode::RowsAsClients),
            &st,
            &PoissonLines::new(&st, seed),
            &no_progress,
        )
        .unwrap();
        assert_eq!(streamed.clients, 6);
        assert!(
            streamed
                .description
                .contains("protects one row, not one of the 3 client_ids)")
        );
        for cell in &streamed.release.items {
            let item = ["a", "b", "c"]
                .iter()
                .position(|&name| name == streamed.names[cell.item as usize])
                .unwrap();
            most[item] = most[item].max(cell.count);
        }
    }
    assert_eq!(most, [4, 1, 1]);
}

#[test]
fn malformed_rows_are_named_by_line() {
    let st = mechanism(0.5, 5);
    let sampling = PoissonLines::new(&st, 1);
    for (text, found) in [
        ("client_id\titem\nu1\ta\n\nu2 b\n", "a line with no tab"),
        ("u1\ta\nu1\ta\nu2\t\n\n", "an empty item"),
        ("u1\ta\n\n\tb\nx\n", "an empty client_id"),
        (
            "u1\ta\nu2\tb\nu3\tc\td\n",
            "a row with more than two fields",
        ),
    ] {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        for mode in [
            ClientMode::RowsAsClients,
            ClientMode::ClientLevel { seed: 1 },
        ] {
            let err = stream_sample_threshold(
                file.path(),
                StreamFormat::Tsv(mode),
                &st,
                &sampling,
                &no_progress,
            )
            .unwrap_err();
            let loaded = Population::from_tsv_file(file.path(), mode).unwrap_err();
            assert_eq!(err.to_string(), loaded.to_string());
            assert!(err.to_string().ends_with(found), "{err}");
        }
    }
}
