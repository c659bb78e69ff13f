//! The states and kinds the service stores: runs, nodes, queued tasks, ledger entries.
//! States only move forward; see [`RunStatus::can_become`]. Each has one spelling, used in the
//! interface and in the database; [`sql_set`] renders a set of them for an SQL `IN (…)` guard.

use std::fmt;

/// State of a whole run (`overall_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

/// State of one node of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeStatus {
    /// Waits for upstream nodes.
    Pending,
    Queued,
    Running,
    Succeeded,
    Failed,
    /// Not run because an upstream node failed or was canceled.
    Skipped,
    Canceled,
}

/// What a run was submitted as: one tool, or a saved workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunKind {
    Node,
    Workflow,
}

/// The lane a run's nodes queue in (a documented extension of the run bodies): claims take
/// higher lanes first, while a share of the slots keeps going to the oldest work of lower
/// lanes so that none starves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Priority {
    /// Someone waits on a screen for the result (a shopper's try-on).
    Interactive,
    #[default]
    Normal,
    /// Work nobody watches (a catalogue of thousands of items).
    Bulk,
}

impl Priority {
    /// The lane's rank in the queue, stored with each task: 0 is claimed first.
    pub fn lane(self) -> i64 {
        match self {
            Self::Interactive => 0,
            Self::Normal => 1,
            Self::Bulk => 2,
        }
    }
}

/// State of the queued task that runs one node: claimed by a worker under a lease, given
/// back or retried, and finally completed, failed or canceled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Waiting for a worker (from `scheduled_at` on).
    Available,
    /// Claimed under a lease.
    Running,
    Completed,
    Failed,
    Canceled,
}

/// Kind of a ledger entry. A run reserves its price when accepted; when it ends, what its
/// succeeded nodes cost is charged and the rest released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgerKind {
    Grant,
    Reserve,
    Charge,
    Release,
    /// A node filled from the result cache: 0 tokens, naming the run whose outputs it copied.
    CacheHit,
}

/// An enum spelled as text in the interface and the database: `ALL` (in the listed order),
/// `NAMES` (their texts, in that order), `as_str`, `Display`, `FromStr`, and serde as the
/// text. `string_enum!(Ty { A => "a", … })` spells an enum declared beside it;
/// `string_enum! { pub enum Ty { A, … } }` (with its docs) declares one, derives included,
/// spelled as its variants' names (the error names).
macro_rules! string_enum {
    ($(#[$meta:meta])* $vis:vis enum $ty:ident { $($(#[$doc:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $ty { $($(#[$doc])* $variant,)+ }
        $crate::status::string_enum!($ty { $($variant => stringify!($variant)),+ });
    };
    ($ty:ident { $($variant:ident => $text:expr),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order listed.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];
            /// [`Self::ALL`] as text.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!("unknown {} '{s}'", stringify!($ty)))
            }
        }
        // As its text, as the database keeps it.
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use string_enum;

string_enum!(RunStatus {
    Queued => "queued",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Canceled => "canceled",
});

string_enum!(NodeStatus {
    Pending => "pending",
    Queued => "queued",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Skipped => "skipped",
    Canceled => "canceled",
});

string_enum!(RunKind {
    Node => "node",
    Workflow => "workflow",
});

string_enum!(Priority {
    Interactive => "interactive",
    Normal => "normal",
    Bulk => "bulk",
});

string_enum!(TaskState {
    Available => "available",
    Running => "running",
    Completed => "completed",
    Failed => "failed",
    Canceled => "canceled",
});

string_enum!(LedgerKind {
    Grant => "grant",
    Reserve => "reserve",
    Charge => "charge",
    Release => "release",
    CacheHit => "cache_hit",
});

/// `'a', 'b'`: a set of states as the list of an SQL `IN (…)`.
pub fn sql_set<T: Copy + fmt::Display>(states: &[T]) -> String {
    states.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
}

impl RunStatus {
    /// States of a run that has not finished.
    pub const UNFINISHED: [Self; 2] = [Self::Queued, Self::Running];

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }

    fn rank(self) -> u8 {
        match self {
            Self::Queued => 0,
            Self::Running => 1,
            Self::Succeeded | Self::Failed | Self::Canceled => 2,
        }
    }

    /// States only move forward: queued → running → a terminal state.
    pub fn can_become(self, next: Self) -> bool {
        !self.is_terminal() && next.rank() > self.rank()
    }

    /// The name the v2 interface uses for this state.
    pub fn v2_name(self) -> &'static str {
        match self {
            Self::Queued => "in_queue",
            Self::Running => "processing",
            Self::Succeeded => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }
}

impl NodeStatus {
    /// States of a node that has not started: waiting for upstream nodes, or for a worker.
    pub const WAITING: [Self; 2] = [Self::Pending, Self::Queued];
    /// States of a node that has not finished.
    pub const UNFINISHED: [Self; 3] = [Self::Pending, Self::Queued, Self::Running];

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled)
    }

    fn rank(self) -> u8 {
        match self {
            Self::Pending => 0,
            Self::Queued => 1,
            Self::Running => 2,
            Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled => 3,
        }
    }

    /// States only move forward: pending → queued → running → a terminal state
    /// (skipped and canceled may also come straight from pending or queued).
    pub fn can_become(self, next: Self) -> bool {
        !self.is_terminal() && next.rank() > self.rank()
    }
}

impl TaskState {
    /// States of a task that a worker may still take or is running.
    pub const LIVE: [Self; 2] = [Self::Available, Self::Running];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_only_move_forward() {
        for s in ["queued", "running", "succeeded", "failed", "canceled"] {
            assert_eq!(s.parse::<RunStatus>().unwrap().as_str(), s);
        }
        assert!(RunStatus::Queued.can_become(RunStatus::Running));
        assert!(RunStatus::Running.can_become(RunStatus::Failed));
        assert!(!RunStatus::Running.can_become(RunStatus::Queued));
        assert!(!RunStatus::Succeeded.can_become(RunStatus::Failed));
        assert!(NodeStatus::Pending.can_become(NodeStatus::Skipped));
        assert!(!NodeStatus::Skipped.can_become(NodeStatus::Queued));
        assert!("paused".parse::<NodeStatus>().is_err());
    }

    #[test]
    fn sets_render_as_sql_lists() {
        assert_eq!(sql_set(&RunStatus::UNFINISHED), "'queued', 'running'");
        assert_eq!(sql_set(&NodeStatus::UNFINISHED), "'pending', 'queued', 'running'");
        assert_eq!(sql_set(&TaskState::LIVE), "'available', 'running'");
        for kind in [RunKind::Node, RunKind::Workflow] {
            assert_eq!(kind.as_str().parse::<RunKind>(), Ok(kind));
        }
        assert_eq!("release".parse::<LedgerKind>(), Ok(LedgerKind::Release));
        assert!("refund".parse::<LedgerKind>().is_err());
    }

    #[test]
    fn v2_names() {
        assert_eq!(RunStatus::Queued.v2_name(), "in_queue");
        assert_eq!(RunStatus::Running.v2_name(), "processing");
        assert_eq!(RunStatus::Succeeded.v2_name(), "completed");
    }
}
