//! A one-round mechanism as a [`Task`]: it asks its round once and outputs the release.

use tally_accounting::Guarantee;

use crate::task::Task;

/// The task of a mechanism that runs one round: it asks `Q` once and outputs the release `R`.
#[derive(Clone, Debug)]
pub struct SingleRound<Q, R> {
    query: Q,
    guarantee: Guarantee,
    asked: bool,
    released: Option<R>,
}

impl<Q, R> SingleRound<Q, R> {
    /// The task asking `query` once, whose one release is `guarantee`-DP.
    pub fn new(query: Q, guarantee: Guarantee) -> Self {
        Self {
            query,
            guarantee,
            asked: false,
            released: None,
        }
    }
}

impl<Q: Clone, R> Task for SingleRound<Q, R> {
    type Query = Q;
    type Release = R;
    /// The round's release; `None` if the task finished before it released.
    type Output = Option<R>;

    fn next_query(&mut self) -> Option<Q> {
        (!std::mem::replace(&mut self.asked, true)).then(|| self.query.clone())
    }

    fn observe(&mut self, release: R) {
        self.released = Some(release);
    }

    fn finish(self) -> Option<R> {
        self.released
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;

    use super::*;

    #[test]
    fn asks_once_and_outputs_its_release() {
        let guarantee = Guarantee {
            epsilon: 1.0,
            delta: 1e-6,
            neighbours: Neighbours::AddRemove,
            model: tally_accounting::TrustModel::Central,
            analysis: "test".to_owned(),
        };
        let mut task = SingleRound::<&str, u32>::new("q", guarantee);
        assert_eq!(task.next_query(), Some("q"));
        task.observe(7);
        assert_eq!(task.next_query(), None);
        assert_eq!(task.finish(), Some(7));
    }
}
