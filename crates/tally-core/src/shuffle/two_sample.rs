//! A two-sample test of the shuffle protocols' unit tests.

/// The two-sample chi-square statistic of two samples of equal size, cells pooled left
/// to right until each holds at least 10 of the two together, against its critical value
/// at α = 1e-6 (Wilson–Hilferty): whether the samples look drawn from one law.
pub(crate) fn same_law(a: &[u64], b: &[u64]) -> bool {
    let max = *a.iter().chain(b).max().unwrap() as usize;
    let (mut ha, mut hb) = (vec![0f64; max + 1], vec![0f64; max + 1]);
    a.iter().for_each(|&v| ha[v as usize] += 1.0);
    b.iter().for_each(|&v| hb[v as usize] += 1.0);
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let mut acc = (0.0, 0.0);
    for (x, y) in ha.into_iter().zip(hb) {
        acc = (acc.0 + x, acc.1 + y);
        if acc.0 + acc.1 >= 10.0 {
            cells.push(acc);
            acc = (0.0, 0.0);
        }
    }
    if let Some(last) = cells.last_mut() {
        *last = (last.0 + acc.0, last.1 + acc.1);
    }
    let stat: f64 = cells.iter().map(|&(x, y)| (x - y).powi(2) / (x + y)).sum();
    let df = (cells.len() - 1) as f64;
    // z_{1 − 1e-6} = 4.753.
    let h = 2.0 / (9.0 * df);
    let critical = df * (1.0 - h + 4.753 * h.sqrt()).powi(3);
    stat <= critical
}
