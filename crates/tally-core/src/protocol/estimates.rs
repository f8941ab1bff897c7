//! The release of a round that estimates every domain element's count (a local or shuffle
//! mechanism's debiased counts): one real-valued estimate per element, in order.

use super::wire::{WireCell, WireRelease, element_cells, element_values};

/// The estimated count of every domain element `0..B`, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimates(pub Vec<f64>);

impl Estimates {
    /// The estimates.
    pub fn estimates(&self) -> Vec<f64> {
        self.0.clone()
    }
}

impl WireRelease for Estimates {
    /// One cell per element, in order: the element, its estimate rounded to the nearest
    /// integer (saturating) as the count, and the estimate.
    fn into_cells(self) -> Vec<WireCell> {
        element_cells(self.0, |estimate| (rounded(estimate), estimate))
    }

    /// Cells `0, 1, …` in order, each count its estimate rounded.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        element_values(cells, |cell| {
            (cell.estimate.is_finite() && cell.count == rounded(cell.estimate))
                .then_some(cell.estimate)
        })
        .map(Self)
    }
}

/// `estimate` rounded to the nearest integer, saturating at the ends of `i64`.
fn rounded(estimate: f64) -> i64 {
    // `as` saturates a float outside the range of i64.
    estimate.round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_read_back_only_in_their_one_spelling() {
        let release = Estimates(vec![-2.25, 0.0, 7.5]);
        let cells = release.clone().into_cells();
        assert_eq!(cells[2].count, 8);
        assert_eq!(Estimates::from_cells(cells.clone()), Ok(release));
        let mut swapped = cells.clone();
        swapped.swap(0, 1);
        assert_eq!(Estimates::from_cells(swapped), Err("1".to_owned()));
        let mut miscounted = cells.clone();
        miscounted[0].count = 0;
        assert_eq!(Estimates::from_cells(miscounted), Err("0".to_owned()));
        let mut infinite = cells;
        infinite[1].estimate = f64::INFINITY;
        assert_eq!(Estimates::from_cells(infinite), Err("1".to_owned()));
    }
}
