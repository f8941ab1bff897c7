//! A relay's round leases: which relay replica holds each of the aggregator's rounds (its
//! uploads are in that replica's memory alone), under a lease with an epoch that fences its
//! one forward.

use sqlx::Row;

use super::Store;
use crate::ServerError;

/// An update of a relay round that its holder still holds, open, at its epoch: `SET $set` on
/// the row of round `$1` whose holder is `$2` at epoch `$3`.
macro_rules! held_round {
    ($set:literal) => {
        concat!(
            "UPDATE relay_rounds SET ",
            $set,
            " WHERE round_id = $1 AND holder = $2 AND epoch = $3 AND closed = 0"
        )
    };
}

/// Where one of the aggregator's rounds is held among the replicas of a relay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundPlace {
    /// Another replica holds it under a live lease and takes its requests at this address.
    HeldAt(String),
    /// Its holder closed it (and forwarded its batch, or nothing below the minimum cohort):
    /// no replica takes its uploads any more.
    Closed,
}

impl Store {
    /// Takes round `round_id`'s lease for replica `holder` until `expires_at`: a round no
    /// replica held yet (epoch 1), or one whose holder's lease lapsed before `now` without
    /// closing it (a takeover: the epoch goes up by one, and the last holder's uploads, in
    /// its memory, are never forwarded: [`Store::close_relay_round`]). `deadline` is the
    /// aggregator's, in seconds since the Unix epoch. Returns the epoch; `None` if another
    /// replica holds a live lease or the round was closed.
    pub(crate) async fn claim_relay_round(
        &self,
        round_id: &str,
        holder: &str,
        deadline: i64,
        (now, expires_at): (i64, i64),
    ) -> Result<Option<i64>, ServerError> {
        let row = sqlx::query(
            "INSERT INTO relay_rounds (round_id, holder, epoch, expires_at, deadline, closed)
             VALUES ($1, $2, 1, $3, $4, 0)
             ON CONFLICT (round_id) DO UPDATE
             SET holder = excluded.holder, epoch = relay_rounds.epoch + 1,
                 expires_at = excluded.expires_at
             WHERE relay_rounds.expires_at < $5 AND relay_rounds.closed = 0
             RETURNING epoch",
        )
        .bind(round_id)
        .bind(holder)
        .bind(expires_at)
        .bind(deadline)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| r.try_get("epoch"))
            .transpose()
            .map_err(Into::into)
    }

    /// Renews until `expires_at` every lease replica `holder` holds on a round it has not
    /// closed, and returns them (round and epoch): a round another replica took over is not
    /// among them.
    pub(crate) async fn renew_relay_rounds(
        &self,
        holder: &str,
        expires_at: i64,
    ) -> Result<Vec<(String, i64)>, ServerError> {
        let rows = sqlx::query(
            "UPDATE relay_rounds SET expires_at = $1 WHERE holder = $2 AND closed = 0
             RETURNING round_id, epoch",
        )
        .bind(expires_at)
        .bind(holder)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("round_id")?, r.try_get("epoch")?)))
            .collect()
    }

    /// The rounds other replicas than `asking` hold under a live lease at `now`, with where
    /// they take requests, and every closed round.
    pub(crate) async fn relay_round_places(
        &self,
        asking: &str,
        now: i64,
    ) -> Result<Vec<(String, RoundPlace)>, ServerError> {
        let rows = sqlx::query(
            "SELECT r.round_id AS round_id, r.closed AS closed, p.address AS address
             FROM relay_rounds r LEFT JOIN replicas p ON p.id = r.holder
             WHERE r.closed = 1 OR (r.expires_at >= $1 AND r.holder <> $2)",
        )
        .bind(now)
        .bind(asking)
        .fetch_all(&self.pool)
        .await?;
        let mut places = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("round_id")?;
            let closed: i64 = row.try_get("closed")?;
            let address: Option<String> = row.try_get("address")?;
            let place = match (closed, address) {
                (0, Some(address)) if !address.is_empty() => RoundPlace::HeldAt(address),
                // A replica that does not serve yet: its rounds are placed at the next look.
                (0, _) => continue,
                _ => RoundPlace::Closed,
            };
            places.push((id, place));
        }
        Ok(places)
    }

    /// Closes round `round_id` for good, if replica `holder` still holds its lease at
    /// `epoch`: the fence of the round's one forward. `false` if another replica took the
    /// round over (its holder must then forward nothing), or it was closed already. Once
    /// closed, no replica takes the round over.
    pub(crate) async fn close_relay_round(
        &self,
        round_id: &str,
        holder: &str,
        epoch: i64,
    ) -> Result<bool, ServerError> {
        let closed = self
            .update_held_relay_round(held_round!("closed = 1"), round_id, holder, epoch)
            .await?;
        Ok(closed == 1)
    }

    /// Lets replica `holder`'s lease of round `round_id` at `epoch` lapse now, unless the
    /// round was closed or taken over.
    pub(crate) async fn release_relay_round(
        &self,
        round_id: &str,
        holder: &str,
        epoch: i64,
    ) -> Result<(), ServerError> {
        self.update_held_relay_round(held_round!("expires_at = 0"), round_id, holder, epoch)
            .await?;
        Ok(())
    }

    /// Runs `update` (a [`held_round!`] statement) on round `round_id` if replica `holder`
    /// still holds its lease at `epoch` and the round is open: the rows changed, 0 or 1.
    async fn update_held_relay_round(
        &self,
        update: &'static str,
        round_id: &str,
        holder: &str,
        epoch: i64,
    ) -> Result<u64, ServerError> {
        let updated = sqlx::query(update)
            .bind(round_id)
            .bind(holder)
            .bind(epoch)
            .execute(&self.pool)
            .await?;
        Ok(updated.rows_affected())
    }

    /// Forgets the rounds whose aggregator's deadline passed before `before` (seconds since
    /// the Unix epoch): the aggregator takes no batch for them any more.
    pub(crate) async fn forget_relay_rounds(&self, before: i64) -> Result<(), ServerError> {
        sqlx::query("DELETE FROM relay_rounds WHERE deadline < $1")
            .bind(before)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
