//! Behaviour of the run/queue/ledger store, on every backend (see `common`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::plan::{compile_node, compile_workflow, Plan};
use atelier_core::status::{NodeStatus, RunStatus};
use atelier_core::tools::Prices;
use atelier_core::workflow::WorkflowDef;
use atelier_core::{ids, NodeError, NodeErrorName};
use atelier_store::{
    NextClaim, Outcome, RunKind, SharedStore, StoreConfig, StoreError, STATUS_PARAM_MAX_BYTES,
};
use common::{submit, submit_as, submit_queued, Queueing};
use serde_json::{json, Value};

fn diamond() -> Plan {
    // A feeds B and C; D needs B only. C is independent of B.
    let def = WorkflowDef::parse(json!({
        "nodes": [
            {"name": "A", "tool": "upscale"},
            {"name": "B", "tool": "reframe", "links": {"image": "A.output"}},
            {"name": "C", "tool": "background_removal", "links": {"image": "A.output"}},
            {"name": "D", "tool": "upscale", "links": {"image": "B.output"}}
        ],
        "outputs": {"d": "D.output", "c": "C.output"}
    }))
    .unwrap();
    def.validate().unwrap();
    compile_workflow(&def, json!({"A.image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

fn single() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

/// A feeds `n` independent nodes B0…B(n-1).
fn fan_out(n: usize) -> Plan {
    let mut nodes = vec![json!({"name": "A", "tool": "upscale"})];
    for i in 0..n {
        nodes.push(json!({"name": format!("B{i}"), "tool": "upscale", "links": {"image": "A.output"}}));
    }
    let def = WorkflowDef::parse(json!({"nodes": nodes, "outputs": {"b": "B0.output"}})).unwrap();
    def.validate().unwrap();
    compile_workflow(&def, json!({"A.image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

fn ok(keys: &[&str]) -> Outcome {
    Outcome::Succeeded(keys.iter().map(|k| k.to_string()).collect())
}

fn fail(retryable: bool) -> Outcome {
    Outcome::Failed {
        error: NodeError::new(NodeErrorName::ToolFailed, "boom"),
        retryable,
        backoff: Duration::ZERO,
    }
}

const LEASE: Duration = Duration::from_secs(30);

backend_tests! {
    a_completion_that_queues_a_child_wakes_this_process_at_once(StoreConfig::default());
    a_workflow_advances_through_its_dag_and_settles_once(StoreConfig::default());
    a_failed_node_skips_its_dependents_and_independent_branches_finish(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    retryable_failures_are_retried_until_attempts_run_out(StoreConfig { max_attempts: 2, ..StoreConfig::default() });
    permanent_failures_fail_at_once(StoreConfig::default());
    expired_leases_are_rescued_and_the_stale_worker_is_fenced(StoreConfig::default());
    released_tasks_do_not_count_an_attempt(StoreConfig::default());
    work_an_engine_lost_is_queued_again_without_counting_an_attempt(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    nodes_that_waited_too_long_for_an_engine_fail_uncharged(StoreConfig::default());
    nodes_not_started_within_their_runs_deadline_fail_uncharged(StoreConfig::default());
    cancel_fences_running_work_and_releases_tokens(StoreConfig::default());
    a_running_node_records_progress_and_a_cancel_is_announced(StoreConfig::default());
    a_queued_run_knows_how_many_nodes_wait_ahead_of_it(StoreConfig::default());
    runs_of_other_accounts_are_not_found(StoreConfig::default());
    insufficient_tokens_leave_nothing_behind(StoreConfig::default());
    concurrent_reservations_never_overdraw(StoreConfig::default());
    concurrent_workflows_of_several_accounts_are_each_written_whole(StoreConfig::default());
    a_run_that_cannot_be_written_fails_alone_among_concurrent_submissions(StoreConfig::default());
    claims_are_fair_across_accounts(StoreConfig::default());
    claims_take_higher_lanes_first_and_stay_fair_within_a_lane(StoreConfig { lower_lane_share_permille: 0, ..StoreConfig::default() });
    a_share_of_claims_goes_to_the_oldest_lower_lane_work(StoreConfig::default());
    a_batch_claim_takes_turns_across_accounts_and_reads_each_node_whole(StoreConfig::default());
    a_batch_of_completions_records_each_as_alone(StoreConfig { max_attempts: 2, ..StoreConfig::default() });
    a_completion_claims_the_next_tasks_in_its_transaction(StoreConfig::default());
    claims_skip_the_tools_they_are_told_to_and_take_the_rest(StoreConfig::default());
    skipped_tools_neither_block_nor_break_fairness(StoreConfig::default());
    claims_follow_the_documented_order_on_generated_queues(StoreConfig { lower_lane_share_permille: 0, ..StoreConfig::default() });
    claims_under_a_cap_follow_the_documented_order_on_generated_queues(StoreConfig { lower_lane_share_permille: 0, max_running_nodes: 2, ..StoreConfig::default() });
    concurrent_claimers_never_share_a_task(StoreConfig::default());
    a_completion_with_a_stale_epoch_is_rejected(StoreConfig::default());
    siblings_completing_together_finish_the_run(StoreConfig::default());
    cancel_racing_completions_settles_once(StoreConfig::default());
    leases_that_expire_on_the_last_attempt_fail_the_node(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    queued_work_wakes_a_waiting_worker(StoreConfig::default());
    runs_are_found_by_generation_and_listed_newest_first(StoreConfig::default());
    a_run_read_leaves_out_long_strings_and_a_claim_reads_them_whole(StoreConfig::default());
    finished_runs_expire_and_are_swept_once(StoreConfig::default());
}

async fn a_workflow_advances_through_its_dag_and_settles_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = diamond();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    assert_eq!(store.balance(acct.id).await.unwrap(), 6, "4 reserved");

    let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(a.node.name, "A");
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none(), "B and C wait for A");
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Running);
    assert!(store.complete(&a, ok(&["a0"])).await.unwrap());

    let first = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let second = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let mut names = [first.node.name.clone(), second.node.name.clone()];
    names.sort();
    assert_eq!(names, ["B", "C"], "independent nodes are ready together");
    assert_eq!(first.upstream["image"], vec!["a0".to_string()]);
    store.complete(&first, ok(&["x"])).await.unwrap();
    store.complete(&second, ok(&["y"])).await.unwrap();
    let d = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(d.node.name, "D");
    assert!(store.complete(&d, ok(&["d0"])).await.unwrap());
    assert!(!store.complete(&d, ok(&["d1"])).await.unwrap(), "a second completion is fenced off");

    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.charged, 4);
    assert!(done.expires_at.is_some());
    assert_eq!(store.balance(acct.id).await.unwrap(), 6);
    assert_eq!(
        store.ledger_for_run(&run).await.unwrap(),
        vec![("reserve".into(), 4), ("charge".into(), 4), ("release".into(), 0)]
    );
}

async fn a_failed_node_skips_its_dependents_and_independent_branches_finish(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    store.complete(&a, ok(&["a0"])).await.unwrap();
    let t1 = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let t2 = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let (b, c) = if t1.node.name == "B" { (t1, t2) } else { (t2, t1) };
    store.complete(&b, fail(true)).await.unwrap();
    let mid = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(mid.status, RunStatus::Running, "C still runs");
    assert_eq!(mid.nodes.iter().find(|n| n.name == "D").unwrap().status, NodeStatus::Skipped);
    store.complete(&c, ok(&["c0"])).await.unwrap();

    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(json!(done.error)["node"], json!("B"));
    assert_eq!(done.charged, 2, "A and C charged; B failed and D skipped cost nothing");
    assert_eq!(store.balance(acct.id).await.unwrap(), 8);
}

async fn retryable_failures_are_retried_until_attempts_run_out(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(t.attempt, 1);
    store.complete(&t, fail(true)).await.unwrap();
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Running);
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(t.attempt, 2);
    store.complete(&t, fail(true)).await.unwrap();
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(store.task_errors(&run, "upscale").await.unwrap().len(), 2);
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
}

async fn permanent_failures_fail_at_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    store.complete(&t, fail(false)).await.unwrap();
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Failed);
}

async fn expired_leases_are_rescued_and_the_stale_worker_is_fenced(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let stale = store.claim("dead", Duration::ZERO, &[]).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(store.rescue_expired().await.unwrap(), 1);
    assert!(!store.heartbeat(&stale, LEASE).await.unwrap());
    let fresh = store.claim("alive", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(fresh.attempt, 2);
    assert!(!store.complete(&stale, ok(&["stale"])).await.unwrap());
    assert!(store.heartbeat(&fresh, LEASE).await.unwrap());
    assert!(store.complete(&fresh, ok(&["fresh"])).await.unwrap());
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.nodes[0].outputs, vec!["fresh".to_string()]);
    assert_eq!(done.charged, 1);
}

async fn released_tasks_do_not_count_an_attempt(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(store.release(&t).await.unwrap());
    assert_eq!(store.claim("w", LEASE, &[]).await.unwrap().unwrap().attempt, 1);
}

async fn work_an_engine_lost_is_queued_again_without_counting_an_attempt(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    let lost = NodeError::new(NodeErrorName::EngineUnavailable, "the cog engine idm failed");
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    store.record_progress(&t, 0.4).await.unwrap();
    let mut changes = store.changes().watch(&run);
    assert!(store.return_lost(&t, &lost).await.unwrap());
    assert!(!store.return_lost(&t, &lost).await.unwrap(), "a second give-back of the claim is fenced off");
    assert!(!store.complete(&t, ok(&["late"])).await.unwrap(), "the claim is gone");
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("the run's watchers hear of it");

    // The node is queued again, without the progress of the lost work, and with one attempt
    // allowed (max_attempts 1) it still has it.
    let queued = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(queued.status, RunStatus::Queued, "nothing of it runs");
    assert_eq!(queued.nodes[0].status, NodeStatus::Queued);
    assert_eq!(queued.nodes[0].progress, None);
    assert_eq!(store.queue_position(&run).await.unwrap(), Some(0));
    let history = store.task_errors(&run, &queued.nodes[0].name).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["counted"], json!(false));
    assert_eq!(history[0]["error"]["name"], "EngineUnavailable");

    let again = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(again.attempt, 1, "the lost work was not an attempt");
    assert!(store.complete(&again, ok(&["k"])).await.unwrap());
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!((done.status, done.charged), (RunStatus::Succeeded, 1), "charged once");
}

async fn nodes_that_waited_too_long_for_an_engine_fail_uncharged(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let old = submit(store.as_ref(), acct.id, &one_of("background_removal")).await.unwrap();
    let other_tool = submit(store.as_ref(), acct.id, &one_of("upscale")).await.unwrap();
    let workflow = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let cutoff = atelier_store::now_micros();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let young = submit(store.as_ref(), acct.id, &one_of("background_removal")).await.unwrap();
    assert_eq!(
        store.queue_position(&young).await.unwrap(),
        Some(1),
        "one cut-out ahead, whatever else waits"
    );

    let error = NodeError::new(NodeErrorName::EngineUnavailable, "no healthy engine for background_removal");
    assert_eq!(store.fail_waiting("background_removal", cutoff, &error, 10).await.unwrap(), 1);
    let failed = store.get_run(acct.id, &old).await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(failed.error.as_ref().map(|e| e.name), Some(NodeErrorName::EngineUnavailable));
    assert_eq!((failed.charged, failed.nodes[0].status), (0, NodeStatus::Failed), "not charged");
    assert_eq!(
        store.get_run(acct.id, &young).await.unwrap().status,
        RunStatus::Queued,
        "it has not waited as long"
    );
    assert_eq!(store.get_run(acct.id, &other_tool).await.unwrap().status, RunStatus::Queued);
    assert_eq!(store.fail_waiting("background_removal", cutoff, &error, 10).await.unwrap(), 0, "failed once");

    // A workflow whose first node waits that long fails with it, its other nodes skipped.
    assert_eq!(store.fail_waiting("upscale", cutoff, &error, 1).await.unwrap(), 1, "a page of one");
    assert_eq!(store.fail_waiting("upscale", cutoff, &error, 10).await.unwrap(), 1);
    let wf = store.get_run(acct.id, &workflow).await.unwrap();
    assert_eq!(wf.status, RunStatus::Failed);
    assert!(wf.nodes.iter().all(|n| n.status != NodeStatus::Queued && n.status != NodeStatus::Running));
    // Every failed run's reservation came back: only the young cut-out's is held.
    let reserved_young = store.get_run(acct.id, &young).await.unwrap().reserved;
    assert_eq!(store.balance(acct.id).await.unwrap(), 100 - reserved_young);
}

async fn nodes_not_started_within_their_runs_deadline_fail_uncharged(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let within = |ms| Queueing { start_within: Some(Duration::from_millis(ms)), ..Queueing::default() };
    let submit_within = |plan: Plan, ms| {
        let store = store.clone();
        async move {
            submit_queued(store.as_ref(), acct.id, &plan, ids::generation_id(), within(ms)).await.unwrap()
        }
    };
    let started = submit_within(single(), 50).await;
    let claimed = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(claimed.run_id, started);
    let late = submit_within(single(), 50).await;
    let patient = submit(store.as_ref(), acct.id, &one_of("background_removal")).await.unwrap();
    assert_eq!(store.fail_unstarted(atelier_store::now_micros(), 10).await.unwrap(), 0, "not yet");
    tokio::time::sleep(Duration::from_millis(80)).await;

    assert_eq!(store.fail_unstarted(atelier_store::now_micros(), 10).await.unwrap(), 1);
    let failed = store.get_run(acct.id, &late).await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(failed.error.as_ref().map(|e| e.name), Some(NodeErrorName::NotStarted));
    assert_eq!((failed.charged, failed.nodes[0].status), (0, NodeStatus::Failed), "not charged");
    assert_eq!(store.get_run(acct.id, &patient).await.unwrap().status, RunStatus::Queued, "no deadline");
    assert!(store.complete(&claimed, ok(&["k"])).await.unwrap(), "a started node is not failed late");
    assert_eq!(store.get_run(acct.id, &started).await.unwrap().status, RunStatus::Succeeded);
    assert_eq!(store.fail_unstarted(atelier_store::now_micros(), 10).await.unwrap(), 0, "failed once");

    // A workflow's later nodes get their deadline when they are queued.
    let workflow = submit_within(diamond(), 10_000).await;
    let a = store.claim("w", LEASE, &["background_removal"]).await.unwrap().unwrap();
    assert_eq!((a.run_id.as_str(), a.node.name.as_str()), (workflow.as_str(), "A"));
    assert!(store.complete(&a, ok(&["a"])).await.unwrap());
    let now = atelier_store::now_micros();
    assert_eq!(store.fail_unstarted(now + 5_000_000, 10).await.unwrap(), 0, "B and C have 10 s from now");
    assert_eq!(store.fail_unstarted(now + 11_000_000, 10).await.unwrap(), 2);
    let wf = store.get_run(acct.id, &workflow).await.unwrap();
    assert_eq!(wf.status, RunStatus::Failed);
    assert_eq!(wf.error.as_ref().map(|e| e.name), Some(NodeErrorName::NotStarted));
    let status_of = |name: &str| wf.nodes.iter().find(|n| n.name == name).map(|n| n.status);
    assert_eq!(
        (status_of("A"), status_of("B"), status_of("C"), status_of("D")),
        (
            Some(NodeStatus::Succeeded),
            Some(NodeStatus::Failed),
            Some(NodeStatus::Failed),
            Some(NodeStatus::Skipped)
        )
    );
    // Only the patient run's reservation is held; the charges are the two nodes that ran.
    let held = store.get_run(acct.id, &patient).await.unwrap().reserved;
    let charged = store.get_run(acct.id, &started).await.unwrap().charged + wf.charged;
    assert_eq!(store.balance(acct.id).await.unwrap(), 100 - held - charged);
}

async fn cancel_fences_running_work_and_releases_tokens(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let canceled = store.cancel_run(acct.id, &run).await.unwrap();
    assert_eq!(canceled.status, RunStatus::Canceled);
    assert!(canceled.nodes.iter().all(|n| n.status == NodeStatus::Canceled));
    assert!(!store.heartbeat(&a, LEASE).await.unwrap());
    assert!(!store.complete(&a, ok(&["late"])).await.unwrap());
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
    // Canceling again changes nothing.
    assert_eq!(store.cancel_run(acct.id, &run).await.unwrap().status, RunStatus::Canceled);
    assert_eq!(store.ledger_for_run(&run).await.unwrap().len(), 3);
}

async fn a_running_node_records_progress_and_a_cancel_is_announced(store: SharedStore) {
    use atelier_core::status::TaskState;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().nodes[0].progress, None);
    let task = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(store.task_state(task.task_id).await.unwrap(), Some(TaskState::Running));
    assert!(store.record_progress(&task, 0.4).await.unwrap());
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().nodes[0].progress, Some(0.4));
    // Out-of-range reports are clamped.
    assert!(store.record_progress(&task, 7.0).await.unwrap());
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().nodes[0].progress, Some(1.0));

    let mut stops = store.stops();
    let seen = *stops.borrow_and_update();
    store.cancel_run(acct.id, &run).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), stops.changed()).await.unwrap().unwrap();
    assert_ne!(*stops.borrow(), seen);
    // The worker that lost its lease reads why, and its reports change nothing any more.
    assert_eq!(store.task_state(task.task_id).await.unwrap(), Some(TaskState::Canceled));
    assert!(!store.record_progress(&task, 0.9).await.unwrap());
    assert_eq!(store.task_state(i64::MAX).await.unwrap(), None);
}

/// SQLite only: on PostgreSQL every schema of a database shares the notification channel,
/// so the other tests' cancels are heard and silence cannot be asserted there. The decision
/// to announce is the same code on both backends (`flows::runs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_a_finished_run_announces_nothing() {
    let fixture = common::sqlite(StoreConfig::default()).await;
    let store = fixture.store;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    let mut stops = store.stops();
    store.cancel_run(acct.id, &run).await.unwrap();
    assert!(stops.has_changed().unwrap(), "the first cancel is announced");
    let seen = *stops.borrow_and_update();
    assert_eq!(store.cancel_run(acct.id, &run).await.unwrap().status, RunStatus::Canceled);
    assert!(!stops.has_changed().unwrap());
    assert_eq!(*stops.borrow(), seen);
}

/// PostgreSQL, two processes (two stores on one schema) claiming at once: each gives its
/// share of claims to the oldest lower-lane work, so the share holds over the fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lower_lane_share_holds_across_processes() {
    use atelier_core::status::Priority::{Bulk, Interactive};
    use atelier_store::prelude::*;
    let Some((_schema, mut stores)) = common::processes(2).await else { return };
    let (second, first) = (stores.pop().unwrap(), stores.pop().unwrap());
    let (catalogue, _) = first.create_account("catalogue", 1000).await.unwrap();
    let (shop, _) = first.create_account("shop", 1000).await.unwrap();
    for _ in 0..20 {
        common::submit_in(&first, catalogue.id, &single(), ids::generation_id(), Bulk).await.unwrap();
    }
    for _ in 0..60 {
        common::submit_in(&first, shop.id, &single(), ids::generation_id(), Interactive).await.unwrap();
    }
    let claims = |store: atelier_store::PgStore, worker: &'static str| async move {
        let mut bulk = 0;
        for _ in 0..20 {
            let task = store.claim(worker, LEASE, &[]).await.unwrap().unwrap();
            bulk += usize::from(task.account_id == catalogue.id);
        }
        bulk
    };
    let (a, b) = tokio::join!(claims(first, "w1"), claims(second, "w2"));
    // Each process owes 2 of its 20 claims to the bulk lane. Two owed claims made at the same
    // moment both aim at the oldest bulk task; the one that finds it locked takes the next
    // task in order, an interactive one (docs/decisions/priority-lanes.md).
    assert!(a >= 1 && b >= 1 && (3..=4).contains(&(a + b)), "bulk claims per process: {a}, {b}");
}

async fn a_queued_run_knows_how_many_nodes_wait_ahead_of_it(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let first = submit(store.as_ref(), a.id, &single()).await.unwrap();
    let second = submit(store.as_ref(), b.id, &diamond()).await.unwrap();
    let third = submit(store.as_ref(), a.id, &single()).await.unwrap();
    assert_eq!(store.queue_position(&first).await.unwrap(), Some(0));
    assert_eq!(store.queue_position(&second).await.unwrap(), Some(1));
    // The diamond queues only its root: one node waits ahead for each run before it.
    assert_eq!(store.queue_position(&third).await.unwrap(), Some(2));
    let claimed = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first);
    assert_eq!(store.queue_position(&first).await.unwrap(), None);
    assert_eq!(store.queue_position(&third).await.unwrap(), Some(1));
    assert_eq!(store.queue_position("no-such-run").await.unwrap(), None);
}

async fn runs_of_other_accounts_are_not_found(store: SharedStore) {
    let (a, _) = store.create_account("a", 10).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    let run = submit(store.as_ref(), a.id, &diamond()).await.unwrap();
    assert!(matches!(store.get_run(b.id, &run).await, Err(StoreError::NotFound)));
    assert!(matches!(store.cancel_run(b.id, &run).await, Err(StoreError::NotFound)));
}

async fn insufficient_tokens_leave_nothing_behind(store: SharedStore) {
    let (acct, _) = store.create_account("a", 3).await.unwrap();
    match submit(store.as_ref(), acct.id, &diamond()).await {
        Err(StoreError::InsufficientTokens { required: 4, balance: 3 }) => {}
        other => panic!("{other:?}"),
    }
    assert!(store
        .list_runs(acct.id, &atelier_store::RunQuery { limit: 10, ..Default::default() })
        .await
        .unwrap()
        .is_empty());
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none());
    assert_eq!(store.balance(acct.id).await.unwrap(), 3);
}

async fn concurrent_reservations_never_overdraw(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    let attempts = (0..50).map(|_| {
        let store = store.clone();
        let plan = plan.clone();
        tokio::spawn(async move { submit(store.as_ref(), acct.id, &plan).await })
    });
    let results: Vec<_> = futures::future::join_all(attempts).await.into_iter().map(|r| r.unwrap()).collect();
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(StoreError::InsufficientTokens { .. }))).count();
    assert_eq!((accepted, refused), (10, 40));
    assert_eq!(store.balance(acct.id).await.unwrap(), 0);
}

/// Many workflows submitted at once by accounts that share a turn on PostgreSQL (ids equal
/// modulo 64), so that their runs are written together: each run has all its nodes, in plan
/// order, with its own statuses and one task for its root, and each account paid for its own.
async fn concurrent_workflows_of_several_accounts_are_each_written_whole(store: SharedStore) {
    let mut accounts = Vec::new();
    for i in 0..65 {
        accounts.push(store.create_account(&format!("a{i}"), 1000).await.unwrap().0.id);
    }
    let (a, b) = (accounts[0], accounts[64]);
    assert_eq!((b - a) % 64, 0, "the two accounts share a turn");
    let submissions = (0..40).map(|i| {
        let store = store.clone();
        let account = if i % 2 == 0 { a } else { b };
        tokio::spawn(async move { (account, submit(store.as_ref(), account, &diamond()).await.unwrap()) })
    });
    let runs: Vec<_> = futures::future::join_all(submissions).await.into_iter().map(|r| r.unwrap()).collect();
    let plan = diamond();
    let expected: Vec<_> = plan
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), if n.links.is_empty() { NodeStatus::Queued } else { NodeStatus::Pending }))
        .collect();
    for (account, id) in &runs {
        let run = store.get_run(*account, id).await.unwrap();
        let nodes: Vec<_> = run.nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
        assert_eq!(nodes, expected, "the plan's nodes in its order");
        assert_eq!((run.status, run.reserved), (RunStatus::Queued, 4));
    }
    assert_eq!(store.balance(a).await.unwrap(), 1000 - 20 * 4);
    assert_eq!(store.balance(b).await.unwrap(), 1000 - 20 * 4);
    let mut claimed = 0;
    while let Some(task) = store.claim("w", LEASE, &[]).await.unwrap() {
        assert_eq!(task.node.name, "A");
        claimed += 1;
    }
    assert_eq!(claimed, 40, "one task per run, for its root");
}

/// A submission that the store refuses (its run id is taken) among many concurrent ones of
/// the same account: it alone fails, and it reserves nothing.
async fn a_run_that_cannot_be_written_fails_alone_among_concurrent_submissions(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let taken = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    let submissions = (0..20).map(|i| {
        let store = store.clone();
        let taken = taken.clone();
        tokio::spawn(async move {
            let id = if i == 7 { taken } else { atelier_core::ids::generation_id() };
            submit_as(store.as_ref(), acct.id, &single(), id).await
        })
    });
    let results: Vec<_> =
        futures::future::join_all(submissions).await.into_iter().map(|r| r.unwrap()).collect();
    for (i, result) in results.iter().enumerate() {
        match (i, result) {
            (7, Err(StoreError::Database(_))) => {}
            (7, other) => panic!("the run with a taken id: {other:?}"),
            (_, other) => assert!(other.is_ok(), "{other:?}"),
        }
    }
    assert_eq!(store.balance(acct.id).await.unwrap(), 100 - 20, "1 + 19 runs reserved");
    assert_eq!(
        store
            .list_runs(acct.id, &atelier_store::RunQuery { limit: 100, ..Default::default() })
            .await
            .unwrap()
            .len(),
        20
    );
}

/// A node run whose image came inline: reading the run leaves the image out of the node's
/// parameters and keeps every other one as it was (numbers, booleans, short strings); the
/// claim hands the worker all of them.
async fn a_run_read_leaves_out_long_strings_and_a_claim_reads_them_whole(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let image = "A".repeat(8 * 1024);
    let short = "B".repeat(usize::try_from(STATUS_PARAM_MAX_BYTES).unwrap());
    let input =
        json!({"model_image": image, "category": "tops", "fabric_description": short, "upscale": true});
    let plan = compile_node("fabric", input.as_object().unwrap(), &Prices::default()).unwrap();
    let sent = plan.nodes[0].params.clone();
    assert!(sent.len() > 3 && sent.values().any(Value::is_boolean), "defaults filled: {sent:?}");
    let id = submit(store.as_ref(), acct.id, &plan).await.unwrap();

    let read = store.get_run(acct.id, &id).await.unwrap();
    let mut expected = sent.clone();
    expected.shift_remove("model_image");
    assert_eq!(read.nodes[0].params, expected, "all but the inline image, in order");
    assert_eq!(read.nodes[0].params.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());

    // Parameters short in all come back as they are.
    let small = compile_node(
        "upscale",
        json!({"image": "https://example.com/a.png"}).as_object().unwrap(),
        &Prices::default(),
    )
    .unwrap();
    let small_id = submit(store.as_ref(), acct.id, &small).await.unwrap();
    assert_eq!(store.get_run(acct.id, &small_id).await.unwrap().nodes[0].params, small.nodes[0].params);

    let task = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(task.run_id, id);
    assert_eq!(task.node.params, sent, "the worker gets every parameter");
}

async fn claims_take_higher_lanes_first_and_stay_fair_within_a_lane(store: SharedStore) {
    use atelier_core::status::Priority::{Bulk, Interactive, Normal};
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let (c, _) = store.create_account("c", 100).await.unwrap();
    let mut runs = Vec::new();
    for (account, lane) in
        [(a.id, Bulk), (a.id, Bulk), (a.id, Normal), (b.id, Interactive), (b.id, Normal), (c.id, Interactive)]
    {
        let id = atelier_core::ids::generation_id();
        runs.push((common::submit_in(store.as_ref(), account, &single(), id, lane).await.unwrap(), lane));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let run = store.get_run(a.id, &runs[0].0).await.unwrap();
    assert_eq!(run.priority, Bulk, "the run keeps its lane");
    let listed =
        store.list_runs(a.id, &atelier_store::RunQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(listed.iter().map(|r| r.priority).collect::<Vec<_>>(), [Normal, Bulk, Bulk]);

    let mut order = Vec::new();
    while let Some(t) = store.claim("w", LEASE, &[]).await.unwrap() {
        order.push(runs.iter().position(|(id, _)| *id == t.run_id).unwrap());
    }
    // Interactive first (b's and c's, oldest first: neither runs anything), then normal: a's
    // before b's, since b already runs its interactive node; bulk last.
    assert_eq!(order, [3, 5, 2, 4, 0, 1]);
}

async fn a_share_of_claims_goes_to_the_oldest_lower_lane_work(store: SharedStore) {
    use atelier_core::status::Priority::{Bulk, Interactive, Normal};
    let (catalogue, _) = store.create_account("catalogue", 1000).await.unwrap();
    let (shop, _) = store.create_account("shop", 1000).await.unwrap();
    let mut lower = Vec::new();
    for lane in [Bulk, Normal, Bulk] {
        let id = atelier_core::ids::generation_id();
        lower.push(common::submit_in(store.as_ref(), catalogue.id, &single(), id, lane).await.unwrap());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for _ in 0..40 {
        let id = atelier_core::ids::generation_id();
        common::submit_in(store.as_ref(), shop.id, &single(), id, Interactive).await.unwrap();
    }
    // One claim in ten (the default share) takes the oldest lower-lane task, whatever its lane.
    let mut taken = Vec::new();
    for n in 1..=20 {
        let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
        if t.account_id == catalogue.id {
            taken.push((n, t.run_id));
        }
    }
    assert_eq!(taken, [(10, lower[0].clone()), (20, lower[1].clone())], "claims 10 and 20, oldest first");
    // A batch owes its share too: ten claims at once take one lower-lane task.
    let batch = store.claim_batch("w", LEASE, &[], 10).await.unwrap();
    assert_eq!(batch.len(), 10);
    let of_catalogue: Vec<_> =
        batch.iter().filter(|t| t.account_id == catalogue.id).map(|t| t.run_id.clone()).collect();
    assert_eq!(of_catalogue, [lower[2].clone()]);
}

async fn claims_are_fair_across_accounts(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let plan =
        compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap();
    for _ in 0..5 {
        submit(store.as_ref(), a.id, &plan).await.unwrap();
    }
    submit(store.as_ref(), b.id, &plan).await.unwrap();
    let first = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let second = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(first.account_id, a.id);
    assert_eq!(second.account_id, b.id, "b's single task is not starved by a's batch");
}

async fn a_batch_claim_takes_turns_across_accounts_and_reads_each_node_whole(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let a_run = submit(store.as_ref(), a.id, &fan_out(3)).await.unwrap();
    let root = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(store.complete(&root, ok(&["a0", "a1"])).await.unwrap());
    let b_run = submit(store.as_ref(), b.id, &single()).await.unwrap();

    // a: B0, B1, B2 queued (older); b: one node. Four slots free, room for three.
    let batch = store.claim_batch("w", LEASE, &[], 3).await.unwrap();
    let owners: Vec<i64> = batch.iter().map(|t| t.account_id).collect();
    assert_eq!(owners, [a.id, b.id, a.id], "each claim of a batch sees the ones before it");
    for task in &batch {
        assert_eq!(task.attempt, 1);
        assert_eq!(task.node.status, atelier_core::status::NodeStatus::Running, "read after the claim");
        if task.run_id == a_run {
            assert!(task.node.name.starts_with('B'));
            assert_eq!(task.upstream["image"], ["a0", "a1"], "upstream outputs read with the node");
        } else {
            assert_eq!(task.run_id, b_run);
            assert_eq!(task.node.params["image"], "x", "the node's parameters whole");
            assert!(task.upstream.is_empty());
        }
    }
    assert_eq!(store.get_run(b.id, &b_run).await.unwrap().status, RunStatus::Running);
    let rest = store.claim_batch("w", LEASE, &[], 4).await.unwrap();
    assert_eq!(rest.len(), 1, "fewer than the limit when fewer are queued");
    assert!(store.claim_batch("w", LEASE, &[], 4).await.unwrap().is_empty());
    for task in batch.iter().chain(&rest) {
        assert!(store.complete(task, ok(&["out"])).await.unwrap());
    }
    assert_eq!(store.get_run(a.id, &a_run).await.unwrap().status, RunStatus::Succeeded);
    assert_eq!(store.get_run(b.id, &b_run).await.unwrap().status, RunStatus::Succeeded);
}

/// One node of `tool` (named `Job`, not after the tool: the claim must read the node's tool).
fn one_of(tool: &str) -> Plan {
    let def = WorkflowDef::parse(json!({
        "nodes": [{"name": "Job", "tool": tool}],
        "outputs": {"out": "Job.output"}
    }))
    .unwrap();
    def.validate().unwrap();
    compile_workflow(&def, json!({"Job.image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

async fn claims_skip_the_tools_they_are_told_to_and_take_the_rest(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let mut runs = Vec::new();
    for tool in ["video", "upscale", "background_removal", "video"] {
        runs.push((tool, submit(store.as_ref(), acct.id, &one_of(tool)).await.unwrap()));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let claim = |skip: &'static [&'static str]| {
        let store = store.clone();
        async move { store.claim("w", LEASE, skip).await.unwrap() }
    };
    let tool_of = |run: &str| runs.iter().find(|(_, id)| id == run).unwrap().0;

    let t = claim(&["video"]).await.unwrap();
    assert_eq!(
        (t.node.tool.as_str(), t.run_id.as_str()),
        ("upscale", runs[1].1.as_str()),
        "the oldest task not skipped"
    );
    assert!(claim(&["video", "background_removal"]).await.is_none(), "only skipped tools are left");
    let t = claim(&["video", "upscale"]).await.unwrap();
    assert_eq!(tool_of(&t.run_id), "background_removal");
    assert!(claim(&["video"]).await.is_none());
    let t = claim(&["upscale"]).await.unwrap();
    assert_eq!(
        (tool_of(&t.run_id), t.run_id.as_str()),
        ("video", runs[0].1.as_str()),
        "skipping other tools takes video"
    );
    let t = claim(&[]).await.unwrap();
    assert_eq!(t.run_id, runs[3].1);
    assert!(claim(&[]).await.is_none());
    for (_, run) in &runs {
        assert_eq!(store.get_run(acct.id, run).await.unwrap().status, RunStatus::Running, "{run}");
    }
}

async fn claims_follow_the_documented_order_on_generated_queues(store: SharedStore) {
    generated_claims(store, 0).await;
}

async fn claims_under_a_cap_follow_the_documented_order_on_generated_queues(store: SharedStore) {
    generated_claims(store, 2).await;
}

/// Queues of several accounts, lanes and tools, generated from many seeds, with claims that
/// skip random tools and completions in between: each claim takes the task the documented
/// order names (`docs/ARCHITECTURE.md`, step 7): tools skipped and, under the soft cap
/// `cap`, accounts at the cap left out; then the highest lane, the account with the fewest
/// running tasks, the oldest task. The claim reads only the heads of the queue (each
/// account's oldest tasks per lane); this is checked against a model that ranks them all.
async fn generated_claims(store: SharedStore, cap: usize) {
    use atelier_core::status::Priority;
    use rand::{Rng, SeedableRng};
    const TOOLS: [&str; 3] = ["upscale", "video", "background_removal"];
    struct Queued {
        run: String,
        account: usize,
        lane: usize,
        tool: usize,
    }
    for seed in 1..=12u64 {
        // Seeded, so that a failing seed replays.
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut accounts = Vec::new();
        for a in 0..2 + rng.gen_range(0..3) {
            accounts.push(store.create_account(&format!("s{seed}a{a}"), 1000).await.unwrap().0.id);
        }
        let mut queued: Vec<Queued> = Vec::new();
        for _ in 0..16 + rng.gen_range(0..16) {
            let (account, lane, tool) = (
                rng.gen_range(0..accounts.len()),
                rng.gen_range(0..Priority::ALL.len()),
                rng.gen_range(0..TOOLS.len()),
            );
            let id = ids::generation_id();
            let run = common::submit_in(
                store.as_ref(),
                accounts[account],
                &one_of(TOOLS[tool]),
                id,
                Priority::ALL[lane],
            )
            .await
            .unwrap();
            queued.push(Queued { run, account, lane, tool });
        }
        let mut running: Vec<(usize, atelier_store::ClaimedTask)> = Vec::new();
        while !queued.is_empty() {
            if !running.is_empty() && rng.gen_range(0..3) == 0 {
                let (_, task) = running.swap_remove(rng.gen_range(0..running.len()));
                assert!(store.complete(&task, ok(&["out"])).await.unwrap());
                continue;
            }
            let skip: Vec<&str> = TOOLS.iter().copied().filter(|_| rng.gen_range(0..4) == 0).collect();
            let busy = |account: usize| running.iter().filter(|(a, _)| *a == account).count();
            // The model: every queued task, ranked whole. `queued` is in the order of queueing.
            let expected = queued
                .iter()
                .enumerate()
                .filter(|(_, q)| !skip.contains(&TOOLS[q.tool]) && (cap == 0 || busy(q.account) < cap))
                .min_by_key(|(i, q)| (q.lane, busy(q.account), *i))
                .map(|(i, _)| i);
            let claimed = store.claim("w", LEASE, &skip).await.unwrap();
            let context = format!("seed {seed}, skipping {skip:?}, running {}", running.len());
            match (expected, claimed) {
                (None, None) => {
                    // Nothing claimable (every tool left skipped, or every account at the
                    // cap): end a running task, if any, and draw other tools to skip.
                    if let Some((_, task)) = running.pop() {
                        assert!(store.complete(&task, ok(&["out"])).await.unwrap());
                    }
                }
                (Some(i), Some(task)) => {
                    assert_eq!(task.run_id, queued[i].run, "{context}");
                    running.push((queued.remove(i).account, task));
                }
                (expected, claimed) => panic!(
                    "expected {:?}, claimed {:?}; {context}",
                    expected.map(|i| &queued[i].run),
                    claimed.map(|t| t.run_id)
                ),
            }
        }
    }
}

async fn skipped_tools_neither_block_nor_break_fairness(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let mut a_runs = Vec::new();
    for _ in 0..3 {
        a_runs.push(submit(store.as_ref(), a.id, &one_of("upscale")).await.unwrap());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let b_video = submit(store.as_ref(), b.id, &one_of("video")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    let b_upscale = submit(store.as_ref(), b.id, &one_of("upscale")).await.unwrap();

    let claim = || store.claim("w", LEASE, &["video"]);
    // Both accounts run nothing: the oldest task goes first.
    assert_eq!(claim().await.unwrap().unwrap().run_id, a_runs[0]);
    // b runs less than a, and its oldest task is skipped: its next one is taken, not a's.
    assert_eq!(claim().await.unwrap().unwrap().run_id, b_upscale, "b is not passed over for its video");
    // One running each: the oldest task not skipped.
    assert_eq!(claim().await.unwrap().unwrap().run_id, a_runs[1]);
    // b runs less, but only its video is left: a's task is not held back by it.
    assert_eq!(claim().await.unwrap().unwrap().run_id, a_runs[2]);
    assert!(claim().await.unwrap().is_none(), "only the skipped video is left");
    assert_eq!(store.claim("w", LEASE, &[]).await.unwrap().unwrap().run_id, b_video);
}

async fn concurrent_claimers_never_share_a_task(store: SharedStore) {
    let mut accounts = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        accounts.push(store.create_account(name, 100).await.unwrap().0);
    }
    let plan = single();
    for i in 0..50 {
        submit(store.as_ref(), accounts[i % accounts.len()].id, &plan).await.unwrap();
    }
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let claimers = (0..8).map(|w| {
        let (store, start) = (store.clone(), start.clone());
        tokio::spawn(async move {
            start.wait().await;
            let mut mine = Vec::new();
            while let Some(task) = store.claim(&format!("w{w}"), LEASE, &[]).await.unwrap() {
                mine.push((task.task_id, task.epoch, task.attempt));
            }
            mine
        })
    });
    let claimed: Vec<(i64, i64, u32)> =
        futures::future::join_all(claimers).await.into_iter().flat_map(|r| r.unwrap()).collect();
    let mut ids: Vec<i64> = claimed.iter().map(|c| c.0).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!((claimed.len(), ids.len()), (50, 50), "every task claimed exactly once");
    assert!(claimed.iter().all(|&(_, epoch, attempt)| epoch == 1 && attempt == 1));
    assert!(store.claim("late", LEASE, &[]).await.unwrap().is_none());
}

async fn a_batch_of_completions_records_each_as_alone(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    // a: a run of two independent nodes and a single; b: a single.
    let pair = fan_out(2);
    let a_pair = submit(store.as_ref(), a.id, &pair).await.unwrap();
    let root = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(store.complete(&root, ok(&["r"])).await.unwrap());
    let a_single = submit(store.as_ref(), a.id, &single()).await.unwrap();
    let b_single = submit(store.as_ref(), b.id, &single()).await.unwrap();
    let tasks = store.claim_batch("w", LEASE, &[], 8).await.unwrap();
    assert_eq!(tasks.len(), 4);
    let of = |run: &str| tasks.iter().filter(|t| t.run_id == run).collect::<Vec<_>>();
    let (siblings, a_one, b_one) = (of(&a_pair), of(&a_single)[0], of(&b_single)[0]);
    let mut stale = b_one.clone();
    stale.epoch -= 1;

    // Given in an order that is neither the runs' nor the accounts'.
    let (retry, done) = (fail(true), ok(&["s"]));
    let batch =
        [(&stale, &done), (b_one, &retry), (siblings[1], &done), (a_one, &fail(false)), (siblings[0], &done)];
    let recorded = store.complete_batch(&batch).await.unwrap();
    assert_eq!(recorded, [false, true, true, true, true], "a stale claim is fenced, the rest recorded");

    let pair_run = store.get_run(a.id, &a_pair).await.unwrap();
    assert_eq!(pair_run.status, RunStatus::Succeeded, "siblings in one batch finish their run");
    assert_eq!(pair_run.charged, 3);
    assert_eq!(store.get_run(a.id, &a_single).await.unwrap().status, RunStatus::Failed);
    assert_eq!(store.get_run(b.id, &b_single).await.unwrap().status, RunStatus::Running, "retried");
    assert_eq!(store.task_errors(&b_single, "upscale").await.unwrap().len(), 1);
    assert_eq!(store.balance(a.id).await.unwrap(), 100 - 3, "the failed single's tokens released");
    let again = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!((again.run_id.as_str(), again.attempt), (b_single.as_str(), 2));
    assert!(store.complete_batch(&[]).await.unwrap().is_empty());
}

async fn a_completion_claims_the_next_tasks_in_its_transaction(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let run = submit(store.as_ref(), a.id, &fan_out(2)).await.unwrap();
    let root = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let next = NextClaim { worker: "w", lease: LEASE, limit: 1 };
    let (recorded, claimed) = store.complete_and_claim(&[(&root, &ok(&["r"]))], Some(next)).await.unwrap();
    assert_eq!(recorded, [true]);
    assert_eq!(claimed.len(), 1, "a child the completion queued is claimed in the same transaction");
    assert_eq!(claimed[0].upstream["image"], ["r"]);
    assert_eq!(claimed[0].node.status, atelier_core::status::NodeStatus::Running);

    let (b0, b1) =
        (claimed.into_iter().next().unwrap(), store.claim("other", LEASE, &[]).await.unwrap().unwrap());
    let next = NextClaim { worker: "w", lease: LEASE, limit: 2 };
    let (recorded, claimed) =
        store.complete_and_claim(&[(&b0, &ok(&["x"])), (&b1, &ok(&["y"]))], Some(next)).await.unwrap();
    assert_eq!(recorded, [true, true]);
    assert!(claimed.is_empty(), "nothing left to claim");
    assert_eq!(store.get_run(a.id, &run).await.unwrap().status, RunStatus::Succeeded);
}

async fn a_completion_with_a_stale_epoch_is_rejected(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    let first = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(store.release(&first).await.unwrap());
    assert!(!store.release(&first).await.unwrap(), "a release is fenced too");
    let current = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(current.task_id, first.task_id);
    assert!(current.epoch > first.epoch);

    let mut stale = current.clone();
    stale.epoch -= 1;
    assert!(!store.heartbeat(&stale, LEASE).await.unwrap());
    assert!(!store.complete(&stale, fail(true)).await.unwrap(), "a stale retry is fenced");
    assert!(!store.complete(&stale, fail(false)).await.unwrap(), "a stale failure is fenced");
    assert!(!store.complete(&stale, ok(&["stale"])).await.unwrap(), "a stale success is fenced");
    assert!(store.task_errors(&run, "upscale").await.unwrap().is_empty());
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Running);

    assert!(store.complete(&current, ok(&["fresh"])).await.unwrap());
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.nodes[0].outputs, vec!["fresh".to_string()]);
    assert_eq!(store.ledger_for_run(&run).await.unwrap().len(), 3, "settled once");
}

async fn siblings_completing_together_finish_the_run(store: SharedStore) {
    // Every sibling's completion must see the others': the last one to
    // commit finishes the run, however they interleave.
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    for round in 0..5 {
        let run = submit(store.as_ref(), acct.id, &fan_out(6)).await.unwrap();
        let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
        store.complete(&a, ok(&["a0"])).await.unwrap();
        let mut siblings = Vec::new();
        while let Some(t) = store.claim("w", LEASE, &[]).await.unwrap() {
            siblings.push(t);
        }
        assert_eq!(siblings.len(), 6);
        let completions = siblings.into_iter().map(|t| {
            let store = store.clone();
            tokio::spawn(async move { store.complete(&t, ok(&["b"])).await.unwrap() })
        });
        for done in futures::future::join_all(completions).await {
            assert!(done.unwrap());
        }
        let done = store.get_run(acct.id, &run).await.unwrap();
        assert_eq!(done.status, RunStatus::Succeeded, "round {round}");
        assert_eq!(done.charged, 7);
    }
    assert_eq!(store.balance(acct.id).await.unwrap(), 100 - 5 * 7);
}

async fn cancel_racing_completions_settles_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    for _ in 0..5 {
        let before = store.balance(acct.id).await.unwrap();
        let run = submit(store.as_ref(), acct.id, &fan_out(6)).await.unwrap();
        let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
        store.complete(&a, ok(&["a0"])).await.unwrap();
        let mut siblings = Vec::new();
        while let Some(t) = store.claim("w", LEASE, &[]).await.unwrap() {
            siblings.push(t);
        }
        let completions: Vec<_> = siblings
            .into_iter()
            .map(|t| {
                let store = store.clone();
                tokio::spawn(async move { store.complete(&t, ok(&["b"])).await.unwrap() })
            })
            .collect();
        let canceled = store.cancel_run(acct.id, &run).await.unwrap();
        let accepted =
            futures::future::join_all(completions).await.into_iter().filter(|r| *r.as_ref().unwrap()).count();
        let done = store.get_run(acct.id, &run).await.unwrap();
        assert!(done.status.is_terminal());
        assert!(done.status == RunStatus::Canceled || done.status == RunStatus::Succeeded);
        assert_eq!(done, canceled, "nothing changes after the cancellation returns");
        let succeeded = done.nodes.iter().filter(|n| n.status == NodeStatus::Succeeded).count();
        assert_eq!(succeeded, accepted + 1, "A and each accepted completion");
        assert_eq!(done.charged, i64::try_from(succeeded).unwrap());
        let ledger = store.ledger_for_run(&run).await.unwrap();
        assert_eq!(ledger.len(), 3, "settled once: {ledger:?}");
        assert_eq!(store.balance(acct.id).await.unwrap(), before - done.charged);
        assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none(), "nothing of the run is left queued");
    }
}

async fn leases_that_expire_on_the_last_attempt_fail_the_node(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("dead", Duration::ZERO, &[]).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(store.rescue_expired().await.unwrap(), 1);
    assert_eq!(store.rescue_expired().await.unwrap(), 0, "rescued once");
    assert!(!store.complete(&a, ok(&["late"])).await.unwrap());
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(json!(done.error)["name"], json!("WorkerLost"));
    assert_eq!(done.nodes[0].status, NodeStatus::Failed);
    assert!(done.nodes[1..].iter().all(|n| n.status == NodeStatus::Skipped));
    let errors = store.task_errors(&run, "A").await.unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["attempt"], json!(1));
    assert_eq!(errors[0]["error"]["name"], json!("WorkerLost"));
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none());
}

async fn queued_work_wakes_a_waiting_worker(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.task_ready().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    submit(store.as_ref(), acct.id, &single()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("a worker waiting for work is woken when a run is queued")
        .unwrap();
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.task_ready().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.complete(&t, fail(true)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("a worker is woken when a task is retried")
        .unwrap();
}

async fn a_completion_that_queues_a_child_wakes_this_process_at_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    // Let the wake-ups of the submission and the claim arrive, then use them up.
    tokio::time::sleep(Duration::from_millis(200)).await;
    while tokio::time::timeout(Duration::ZERO, store.task_ready()).await.is_ok() {}
    store.complete(&a, ok(&["a"])).await.unwrap();
    // Not a notification's round trip through the database: the wake-up is already there.
    assert!(
        tokio::time::timeout(Duration::ZERO, store.task_ready()).await.is_ok(),
        "completing A queued B and C; this process's waiting worker is woken when complete returns"
    );
}

async fn runs_are_found_by_generation_and_listed_newest_first(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let first = submit(store.as_ref(), a.id, &diamond()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    let second = submit(store.as_ref(), a.id, &single()).await.unwrap();
    submit(store.as_ref(), b.id, &single()).await.unwrap();

    let record = store.get_run(a.id, &first).await.unwrap();
    assert_eq!(record.kind, RunKind::Workflow);
    assert_eq!(record.reserved, 4);
    assert_eq!(record.status, RunStatus::Queued);
    let plan_order: Vec<String> = diamond().nodes.into_iter().map(|n| n.name).collect();
    assert_eq!(record.nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>(), plan_order);
    assert_eq!(record.outputs.keys().collect::<Vec<_>>(), ["d", "c"]);
    let by_gen = store.run_of_generation(a.id, &record.nodes[2].gen_id).await.unwrap();
    assert_eq!(by_gen, record);
    assert!(matches!(
        store.run_of_generation(b.id, &record.nodes[2].gen_id).await,
        Err(StoreError::NotFound)
    ));

    let listed =
        store.list_runs(a.id, &atelier_store::RunQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [second.as_str(), first.as_str()]);
    assert_eq!(
        store
            .list_runs(a.id, &atelier_store::RunQuery { limit: 1, ..Default::default() })
            .await
            .unwrap()
            .len(),
        1
    );
    let older = store
        .list_runs(
            a.id,
            &atelier_store::RunQuery { limit: 10, before: Some(listed[0].created_at), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(older.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [first.as_str()]);
}

async fn finished_runs_expire_and_are_swept_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &single()).await.unwrap();
    assert_eq!(store.run_expiry(&run).await.unwrap(), None, "no expiry while it runs");
    assert!(matches!(store.run_expiry("nope").await, Err(StoreError::NotFound)));
    let t = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    store.complete(&t, ok(&["k"])).await.unwrap();
    let done = store.get_run(acct.id, &run).await.unwrap();
    let retention = i64::try_from(store.config().retention.as_micros()).unwrap();
    assert_eq!(done.expires_at, Some(done.finished_at.unwrap() + retention));
    assert_eq!(store.run_expiry(&run).await.unwrap(), done.expires_at);

    let now = atelier_store::now_micros();
    assert!(store.expired_runs(now, 10).await.unwrap().is_empty());
    store.set_expiry(&run, now - 1).await.unwrap();
    assert_eq!(store.expired_runs(now, 10).await.unwrap(), vec![run.clone()]);
    assert!(store.expired_runs(now, 0).await.unwrap().is_empty());
    store.mark_swept(&run).await.unwrap();
    assert!(store.expired_runs(now, 10).await.unwrap().is_empty());
}
