//! Run and node states. States only move forward; see [`RunStatus::can_become`].

use std::fmt;
use std::str::FromStr;

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

macro_rules! string_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!("unknown {} '{other}'", stringify!($ty))),
                }
            }
        }
    };
}

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

impl RunStatus {
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
    fn v2_names() {
        assert_eq!(RunStatus::Queued.v2_name(), "in_queue");
        assert_eq!(RunStatus::Running.v2_name(), "processing");
        assert_eq!(RunStatus::Succeeded.v2_name(), "completed");
    }
}
