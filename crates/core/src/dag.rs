//! The graph of a run's nodes: which nodes feed which, what becomes ready when a node
//! succeeds, what is doomed when one fails, and how the run ends. Used by [`crate::plan`]
//! when a run is compiled and by the store when it advances a run.

use crate::error::NodeError;
use crate::status::{NodeStatus, RunStatus};

/// A node of a DAG: its name and the names of the nodes that feed it (repeats allowed).
pub trait Node {
    fn name(&self) -> &str;
    fn sources(&self) -> impl Iterator<Item = &str>;

    fn feeds_on(&self, source: &str) -> bool {
        self.sources().any(|s| s == source)
    }
}

/// A node of a run in progress: a [`Node`] with a state and, once it failed, an error.
pub trait RunNode: Node {
    fn status(&self) -> NodeStatus;
    fn error(&self) -> Option<&NodeError>;
}

/// Nodes fed by `name`, in the order given.
pub fn children<'a, N: Node>(nodes: &'a [N], name: &str) -> Vec<&'a str> {
    nodes.iter().filter(|n| n.feeds_on(name)).map(Node::name).collect()
}

/// Every node downstream of `name`, transitively, not counting `name`; nearest first.
pub fn descendants<'a, N: Node>(nodes: &'a [N], name: &str) -> Vec<&'a str> {
    let mut found: Vec<&'a str> = Vec::new();
    let mut next = 0;
    let mut from = name;
    loop {
        for child in children(nodes, from) {
            if child != name && !found.contains(&child) {
                found.push(child);
            }
        }
        let Some(&n) = found.get(next) else { return found };
        from = n;
        next += 1;
    }
}

/// The pending children of `finished` (which just succeeded) whose sources have all
/// succeeded: they are to be queued now.
pub fn ready_children<'a, N: RunNode>(nodes: &'a [N], finished: &str) -> Vec<&'a str> {
    let succeeded =
        |name: &str| nodes.iter().any(|n| n.name() == name && n.status() == NodeStatus::Succeeded);
    nodes
        .iter()
        .filter(|n| n.status() == NodeStatus::Pending && n.feeds_on(finished))
        .filter(|n| n.sources().all(succeeded))
        .map(Node::name)
        .collect()
}

/// How a run ends once every node is terminal: `None` while a node is left to run, else its
/// final status and error (the first failed node's, in the order given).
pub fn outcome<N: RunNode>(nodes: &[N]) -> Option<(RunStatus, Option<NodeError>)> {
    if nodes.iter().any(|n| !n.status().is_terminal()) {
        return None;
    }
    Some(match nodes.iter().find(|n| n.status() == NodeStatus::Failed) {
        None => (RunStatus::Succeeded, None),
        Some(failed) => (RunStatus::Failed, Some(NodeError::run_failed(failed.name(), failed.error()))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::NodeErrorName;

    struct N(&'static str, &'static [&'static str], NodeStatus, Option<NodeError>);

    impl Node for N {
        fn name(&self) -> &str {
            self.0
        }
        fn sources(&self) -> impl Iterator<Item = &str> {
            self.1.iter().copied()
        }
    }

    impl RunNode for N {
        fn status(&self) -> NodeStatus {
            self.2
        }
        fn error(&self) -> Option<&NodeError> {
            self.3.as_ref()
        }
    }

    use NodeStatus::*;

    /// a → b → d, a → c → d, e alone.
    fn diamond(a: NodeStatus, b: NodeStatus, c: NodeStatus) -> Vec<N> {
        vec![
            N("a", &[], a, None),
            N("b", &["a"], b, None),
            N("c", &["a", "a"], c, None),
            N("d", &["b", "c"], Pending, None),
            N("e", &[], Running, None),
        ]
    }

    #[test]
    fn descendants_are_transitive_nearest_first_and_listed_once() {
        let nodes = diamond(Pending, Pending, Pending);
        assert_eq!(descendants(&nodes, "a"), ["b", "c", "d"]);
        assert_eq!(descendants(&nodes, "c"), ["d"]);
        assert!(descendants(&nodes, "e").is_empty());
        assert_eq!(children(&nodes, "a"), ["b", "c"]);
    }

    #[test]
    fn a_child_is_ready_when_all_its_sources_succeeded() {
        assert_eq!(ready_children(&diamond(Succeeded, Pending, Pending), "a"), ["b", "c"]);
        assert!(ready_children(&diamond(Succeeded, Succeeded, Running), "b").is_empty());
        let mut nodes = diamond(Succeeded, Succeeded, Succeeded);
        assert_eq!(ready_children(&nodes, "c"), ["d"]);
        nodes[3].2 = Queued;
        assert!(ready_children(&nodes, "c").is_empty(), "only pending nodes are queued");
    }

    #[test]
    fn a_run_ends_when_every_node_is_terminal() {
        assert_eq!(outcome(&diamond(Succeeded, Succeeded, Succeeded)), None);
        let mut nodes = diamond(Succeeded, Succeeded, Succeeded);
        nodes[3].2 = Succeeded;
        nodes[4].2 = Succeeded;
        assert_eq!(outcome(&nodes), Some((RunStatus::Succeeded, None)));
        nodes[1] = N("b", &["a"], Failed, Some(NodeError::new(NodeErrorName::Timeout, "slow")));
        nodes[3].2 = Skipped;
        let (status, error) = outcome(&nodes).unwrap();
        assert_eq!(status, RunStatus::Failed);
        assert_eq!(error, Some(NodeError::run_failed("b", nodes[1].3.as_ref())));
    }
}
