//! Spend alerts of refused reservations (`crate::spend` records those of reservations that
//! committed, in their transaction): a reservation refused by a limit reaches that limit's
//! 100%, written in a transaction of its own once the refused one rolled back.

use atelier_core::spend::Holder;

use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::spend::{self, Payer, PeriodUse, Reached};

/// Announces that `refused`, a `SpendLimitReached` of a reservation by `payer`, reached its
/// limit (100%), unless that was announced before in the period: in a transaction of its
/// own, after the refused one rolled back. Nothing when the account has no endpoint.
pub(crate) async fn announce_refusal<B: Backend>(
    store: &B,
    payer: Payer,
    refused: &StoreError,
) -> Result<()> {
    let StoreError::SpendLimitReached { holder, period, limit, used, resets_at, .. } = *refused else {
        return Ok(());
    };
    let holder_id = match holder {
        Holder::Key => match payer.key_id {
            Some(id) => id,
            None => return Ok(()),
        },
        Holder::Account => payer.account_id,
    };
    let now = atelier_core::time::now_micros();
    let mut tx = store.begin().await?;
    B::lock_account(&mut tx, payer.account_id).await?;
    if spend::endpoint(&mut *tx, payer.account_id).await?.is_none() {
        return Ok(());
    }
    let usage = PeriodUse { period, limit: Some(limit), used, resets_at };
    let queued =
        spend::record(&mut *tx, payer.account_id, Reached { holder, holder_id, threshold: 100, usage }, now)
            .await?;
    B::commit(tx).await?;
    if queued {
        store.feed().publish_deliveries();
    }
    Ok(())
}

/// `result`, after announcing its refusal by a spend limit ([`announce_refusal`]); a failure
/// to announce is logged and leaves the answer as it is.
pub(crate) async fn refused<B: Backend, T>(store: &B, payer: Payer, result: Result<T>) -> Result<T> {
    if let Err(refusal @ StoreError::SpendLimitReached { .. }) = &result {
        if let Err(e) = announce_refusal(store, payer, refusal).await {
            tracing::warn!(error = %e, "recording a spend alert failed");
        }
    }
    result
}
