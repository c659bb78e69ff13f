//! The audit log's chain: each entry holds the hash of the one before it and its own hash
//! over every field it records, so that an entry edited, removed or moved breaks the chain
//! at that point ([`verify`]).
//!
//! An entry's hash is SHA-256, in hex, over a fixed label and each field in a fixed order,
//! each written as its length in bytes, `:` and its bytes (`-` for an absent one), so that
//! no two different entries have the same text. The first entry's `prev_hash` is
//! [`GENESIS`]. Entries are numbered from 1 without gaps.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::time::Micros;

/// The `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The action an entry records when entries older than the retention were removed: its
/// summary names the last one removed (`through_id`, `through_hash`), from which the
/// chain goes on.
pub const PRUNED: &str = "audit.pruned";

/// One entry as the log keeps and exports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: i64,
    /// Microseconds since the Unix epoch, UTC.
    pub at: Micros,
    /// The account the change belongs to; none for the operator's own (configuration).
    pub account_id: Option<i64>,
    /// Who made the change: `key:atl_abcd` (an API key, by prefix), `session:atl_abcd`
    /// (a console session, by its key's prefix), `operator` (the CLI) or `system`.
    pub actor: String,
    /// The client's address, for changes made over HTTP.
    pub address: Option<String>,
    /// What was done: `key.created`, `workflow.deleted`, …
    pub action: String,
    /// What it was done to: a key's prefix, a workflow's name, a run's id.
    pub target: Option<String>,
    /// What changed, as compact JSON; never a secret.
    pub summary: String,
    pub prev_hash: String,
    pub hash: String,
}

impl Entry {
    /// The hash this entry's fields give.
    pub fn computed_hash(&self) -> String {
        hash(
            self.id,
            self.at,
            self.account_id,
            &self.actor,
            self.address.as_deref(),
            &self.action,
            self.target.as_deref(),
            &self.summary,
            &self.prev_hash,
        )
    }
}

/// The hash of an entry with these fields.
#[allow(clippy::too_many_arguments)]
pub fn hash(
    id: i64,
    at: Micros,
    account_id: Option<i64>,
    actor: &str,
    address: Option<&str>,
    action: &str,
    target: Option<&str>,
    summary: &str,
    prev_hash: &str,
) -> String {
    let mut digest = Sha256::new();
    digest.update(b"atelier-audit-v1\n");
    let mut field = |value: Option<&str>| match value {
        Some(v) => {
            digest.update(v.len().to_string().as_bytes());
            digest.update(b":");
            digest.update(v.as_bytes());
        }
        None => digest.update(b"-"),
    };
    field(Some(&id.to_string()));
    field(Some(&at.to_string()));
    field(account_id.map(|a| a.to_string()).as_deref());
    field(Some(actor));
    field(address);
    field(Some(action));
    field(target);
    field(Some(summary));
    field(Some(prev_hash));
    hex::encode(digest.finalize())
}

/// Where a chain breaks, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The first entry that does not follow from the ones before it (the id where one is
    /// missing).
    pub id: i64,
    pub reason: String,
}

/// Checks entries, oldest first, as read from the log: each is numbered one after the one
/// before it, holds that one's hash, and hashes to its own `hash`. The first may follow
/// entries that were pruned: then an [`PRUNED`] entry among them names it. `head`, when
/// given, is the hash the log says its last entry has (a removed last entry shows there).
/// Returns how many entries were checked.
pub fn verify(entries: &[Entry], head: Option<&str>) -> Result<usize, Break> {
    let Some(first) = entries.first() else {
        return match head {
            Some(h) if h != GENESIS => {
                Err(Break { id: 1, reason: "the log is empty but its head names an entry".into() })
            }
            _ => Ok(0),
        };
    };
    if first.prev_hash != GENESIS || first.id != 1 {
        let pruned = entries.iter().filter(|e| e.action == PRUNED).any(|e| {
            let summary: serde_json::Value = serde_json::from_str(&e.summary).unwrap_or_default();
            summary["through_id"].as_i64() == Some(first.id - 1)
                && summary["through_hash"].as_str() == Some(first.prev_hash.as_str())
        });
        if !pruned {
            return Err(Break {
                id: first.id,
                reason:
                    "the first entry follows entries that are missing, and no audit.pruned entry names them"
                        .into(),
            });
        }
    }
    let mut previous: Option<&Entry> = None;
    for entry in entries {
        if let Some(previous) = previous {
            if entry.id != previous.id + 1 {
                return Err(Break {
                    id: previous.id + 1,
                    reason: format!("entries {} to {} are missing", previous.id + 1, entry.id - 1),
                });
            }
            if entry.prev_hash != previous.hash {
                return Err(Break {
                    id: entry.id,
                    reason: "it does not hold the hash of the entry before it".into(),
                });
            }
        }
        if entry.computed_hash() != entry.hash {
            return Err(Break {
                id: entry.id,
                reason: "its fields do not give its hash: it was changed".into(),
            });
        }
        previous = Some(entry);
    }
    match (head, previous) {
        (Some(head), Some(last)) if head != last.hash => Err(Break {
            id: last.id + 1,
            reason: "the log's head names a later entry: entries after this one were removed".into(),
        }),
        _ => Ok(entries.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<Entry> {
        let mut entries: Vec<Entry> = Vec::new();
        for id in 1..=n {
            let prev_hash = entries.last().map_or(GENESIS.to_string(), |e| e.hash.clone());
            let mut entry = Entry {
                id,
                at: 1_000 + id,
                account_id: Some(7),
                actor: "key:atl_abcd".into(),
                address: (id % 2 == 0).then(|| "10.0.0.1".into()),
                action: "key.created".into(),
                target: Some(format!("atl_{id:04}")),
                summary: format!(r#"{{"n":{id}}}"#),
                prev_hash,
                hash: String::new(),
            };
            entry.hash = entry.computed_hash();
            entries.push(entry);
        }
        entries
    }

    #[test]
    fn an_intact_chain_verifies_and_any_change_breaks_it_where_it_was_made() {
        let entries = chain(6);
        let head = entries.last().unwrap().hash.clone();
        assert_eq!(verify(&entries, Some(&head)), Ok(6));
        assert_eq!(verify(&[], None), Ok(0));

        // Edited: any field, the hash left as it was.
        let mut edited = entries.clone();
        edited[2].summary = r#"{"n":99}"#.into();
        assert_eq!(verify(&edited, Some(&head)).unwrap_err().id, 3);
        let mut edited = entries.clone();
        edited[3].address = None;
        assert_eq!(verify(&edited, Some(&head)).unwrap_err().id, 4);
        // Edited with its hash recomputed: the next entry no longer follows.
        let mut rehashed = entries.clone();
        rehashed[2].actor = "operator".into();
        rehashed[2].hash = rehashed[2].computed_hash();
        assert_eq!(verify(&rehashed, Some(&head)).unwrap_err().id, 4);
        // Removed: in the middle, the first, the last.
        let mut removed = entries.clone();
        removed.remove(2);
        let broken = verify(&removed, Some(&head)).unwrap_err();
        assert_eq!((broken.id, broken.reason.as_str()), (3, "entries 3 to 3 are missing"));
        assert_eq!(verify(&entries[1..], Some(&head)).unwrap_err().id, 2);
        let broken = verify(&entries[..5], Some(&head)).unwrap_err();
        assert_eq!(broken.id, 6, "{broken:?}");
        // Reordered: two entries' places swapped, ids kept in order.
        let mut swapped = entries.clone();
        swapped.swap(1, 2);
        (swapped[1].id, swapped[2].id) = (2, 3);
        assert_eq!(verify(&swapped, Some(&head)).unwrap_err().id, 2);
        // The head names an entry the log does not have.
        assert_eq!(verify(&[], Some(&head)).unwrap_err().id, 1);
    }

    #[test]
    fn a_pruned_start_verifies_only_when_an_entry_names_it() {
        let mut entries = chain(4);
        let through = entries[1].clone();
        let kept: Vec<Entry> = entries.split_off(2);
        assert!(verify(&kept, None).is_err(), "nothing says entries 1 and 2 were pruned");
        let mut with_note = kept.clone();
        let last = with_note.last().unwrap().clone();
        let mut note = Entry {
            id: last.id + 1,
            at: last.at + 1,
            account_id: None,
            actor: "system".into(),
            address: None,
            action: PRUNED.into(),
            target: None,
            summary: format!(r#"{{"through_id":{},"through_hash":"{}"}}"#, through.id, through.hash),
            prev_hash: last.hash.clone(),
            hash: String::new(),
        };
        note.hash = note.computed_hash();
        with_note.push(note);
        let head = with_note.last().unwrap().hash.clone();
        assert_eq!(verify(&with_note, Some(&head)), Ok(3));
    }

    #[test]
    fn fields_are_delimited_so_that_moving_text_between_them_changes_the_hash() {
        let a = hash(1, 2, None, "ab", Some("c"), "x", None, "{}", GENESIS);
        let b = hash(1, 2, None, "a", Some("bc"), "x", None, "{}", GENESIS);
        let c = hash(1, 2, None, "ab", None, "x", Some("c"), "{}", GENESIS);
        assert!(a != b && a != c && b != c);
        assert_eq!(a.len(), 64);
    }
}
