//! Priority lanes: which claims take the oldest lower-lane work first.
//!
//! Claims take the highest lane with claimable work. So that a busy higher lane never
//! starves the lower ones, a share of this process's claims (`StoreConfig::
//! lower_lane_share_permille`), spread evenly, take the oldest claimable task of a lower lane
//! first (of any lane below the highest one waiting). The share is of claims, so it holds
//! whatever the number of slots (one slot: one claim in ten at 10%) and across processes
//! (each keeps its own count). A claim that finds no lower-lane work takes the higher lane's.

use std::sync::{Mutex, PoisonError};

pub(crate) struct LaneCredit {
    share_permille: u64,
    /// Claims owed to lower lanes and not yet made, in thousandths of a claim (exact, where
    /// a float would count 0.1 ten times as 0.999…).
    credit: Mutex<u64>,
}

impl LaneCredit {
    pub(crate) fn new(share_permille: u32) -> Self {
        Self { share_permille: u64::from(share_permille.min(1000)), credit: Mutex::new(0) }
    }

    /// How many of a claim of up to `limit` tasks take lower-lane work first.
    pub(crate) fn take(&self, limit: usize) -> usize {
        let limit = limit as u64;
        if self.share_permille == 0 || limit == 0 {
            return 0;
        }
        let mut credit = self.credit.lock().unwrap_or_else(PoisonError::into_inner);
        *credit += self.share_permille * limit;
        let owed = (*credit / 1000).min(limit);
        *credit -= owed * 1000;
        owed as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_claims_spread_evenly_goes_to_lower_lanes() {
        let lanes = LaneCredit::new(100);
        let owed: Vec<usize> = (0..30).map(|_| lanes.take(1)).collect();
        assert_eq!(owed.iter().sum::<usize>(), 3, "one claim in ten: {owed:?}");
        assert_eq!(owed.iter().position(|&n| n == 1), Some(9));
        assert_eq!(lanes.take(25), 2, "2.5 of a batch of 25, the half kept for later");
        assert_eq!(lanes.take(5), 1);
        assert_eq!(LaneCredit::new(0).take(100), 0, "strict priority");
        assert_eq!(LaneCredit::new(1000).take(4), 4);
    }
}
