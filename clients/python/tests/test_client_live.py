"""The client against a real Atelier server (started by ``conftest.server``)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Dict

import httpx
import pytest
from conftest import Server

from atelier_client import (
    AsyncClient,
    AtelierError,
    BatchNotFound,
    Client,
    Deleted,
    DeliveryNotFound,
    FileUrlInvalid,
    Forbidden,
    IdempotencyKeyReused,
    InsufficientTokens,
    SpendLimitReached,
    InvalidImage,
    InvalidInput,
    InvalidRequest,
    MissingInputs,
    NodeRunStatus,
    ReadOnlyTemplate,
    RunNotFound,
    Unauthorized,
    UnknownTool,
    UploadNotFound,
    V2Status,
    WorkflowNotFound,
    WorkflowRunStatus,
    error_from_response,
)

WAIT = dict(timeout=120, poll_interval=0.2)

# A workflow of this suite: upscale, then reframe to a square; a name with a space,
# punctuation and a non-ASCII character (percent-encoded in paths).
WORKFLOW_NAME = "py client: up → square"
WORKFLOW: Dict[str, Any] = {
    "name": WORKFLOW_NAME,
    "description": "Upscale, then reframe to 1:1",
    "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
    "nodes": [
        {"name": "Up", "tool": "upscale", "params": {"scale": 2}},
        {"name": "Square", "tool": "reframe", "params": {"aspect_ratio": "1:1"}, "links": {"image": "Up.output"}},
    ],
    "outputs": {"big": "Up.output", "square": "Square.output"},
}


@pytest.fixture(scope="module")
def saved_workflow(server: Server) -> str:
    with Client(server.base_url, server.api_key) as client:
        client.save_workflow(WORKFLOW_NAME, WORKFLOW)
    return WORKFLOW_NAME


# --- discovery and pricing ------------------------------------------------------------------------


def test_tools_describe_every_tool(client: Client) -> None:
    tools = {t.name: t for t in client.tools()}
    assert {"upscale", "background_removal", "reframe", "virtual_tryon", "video", "product_shoot"} <= set(tools)
    upscale = tools["upscale"]
    image = upscale.param("image")
    assert image is not None and image.required and image.type == "image"
    scale = upscale.param("scale")
    assert scale is not None and scale.values == [2, 4] and not scale.required
    assert tools["reframe"].required_params == ["image"] or "image" in tools["reframe"].required_params
    assert upscale.fidelity == "production" and isinstance(upscale.price, str)


def test_estimate_prices_a_run_and_reserves_nothing(client: Client, png: str) -> None:
    before = client.balance()
    small = client.estimate("upscale", {"image": png, "scale": 2})
    big = client.estimate("upscale", {"image": png, "scale": 4})
    assert small.tokens == 1 and big.tokens == 2
    assert small.balance == before and list(small.nodes.values()) == [1]
    assert client.balance() == before


def test_workflows_list_system_templates(client: Client) -> None:
    items = client.workflows()
    system = [w for w in items if w.system_workflow]
    assert len(system) >= 4
    assert all(w.id > 0 and w.created_at for w in items)
    described = client.workflow(system[0].name)
    assert described.name == system[0].name
    assert described.sample_payload["type"] == "workflow"
    assert described.sample_payload["target"] == system[0].name
    assert set(described.sample_payload["input"]) == set(described.inputs.mandatory)
    assert described.workflow.nodes and described.outputs



def paths(urls: Any) -> Any:
    """Output URLs without their query: signed URLs (ATELIER_TEST_OUTPUT_ACCESS=signed) change
    their expiry between two reads that fall in different steps of it."""
    if isinstance(urls, str):
        return urls.split("?")[0]
    return [u.split("?")[0] for u in urls]

# --- node runs ------------------------------------------------------------------------------------


def test_run_wait_and_fetch_the_output(client: Client, png: str) -> None:
    before = client.balance()
    run = client.run("upscale", {"image": png, "scale": 2})
    assert run.id.startswith("gen_") and run.warnings == []
    final = run.wait(**WAIT)  # events if the server has them, else polling
    assert isinstance(final, NodeRunStatus)
    assert final.succeeded and final.overall_status == final.status == "succeeded"
    assert final.model_name == "upscale" and final.error is None and final.tokens == 1
    assert final.created_at and final.finished_at and final.expires_at
    assert len(final.output) == 1
    image = httpx.get(final.output[0], timeout=30)
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert client.balance() == before - 1
    again = client.status(run.id)
    assert isinstance(again, NodeRunStatus) and paths(again.output) == paths(final.output)


def test_an_output_url_works_as_given_and_signed_urls_refuse_any_other(client: Client, png: str) -> None:
    final = client.run("upscale", {"image": png}).wait(**WAIT)
    url = final.output[0]
    assert httpx.get(url, timeout=30).status_code == 200
    bare = url.split("?")[0]
    answer = httpx.get(bare, timeout=30)
    if "?" not in url:  # public outputs: the URL is the path
        assert answer.status_code == 200
        return
    assert "expires=" in url and "signature=" in url
    error = error_from_response(answer.status_code, answer.json())
    assert isinstance(error, FileUrlInvalid) and error.status_code == 403 and error.reason == "unsigned"
    forged = url[:-1] + ("A" if url[-1] != "A" else "B")
    answer = httpx.get(forged, timeout=30)
    error = error_from_response(answer.status_code, answer.json())
    assert isinstance(error, FileUrlInvalid) and error.reason == "signature"


def test_wait_by_polling_only(client: Client, png: str) -> None:
    run = client.run("background_removal", {"image": png})
    final = run.wait(use_events=False, **WAIT)
    assert final.succeeded and run.final_status is final
    assert run.wait() is final  # known already: no request


def test_cancel_a_running_run(client: Client, png: str) -> None:
    run = client.run("upscale", {"image": png, "scale": 4})
    canceled = run.cancel()
    assert canceled.overall_status in ("canceled", "succeeded")  # succeeded only if it beat us
    final = run.wait(**WAIT)
    assert final.canceled, final
    assert final.error is not None and final.error.name == "Canceled"
    assert final.tokens == 0


def test_runs_listing_filters_and_pages(client: Client, png: str) -> None:
    for _ in range(2):
        client.run("reframe", {"image": png, "aspect_ratio": "1:1"}).wait(**WAIT)
    page = client.runs(limit=1, target="reframe")
    assert len(page.runs) == 1 and page.next_before is not None
    item = page.runs[0]
    assert (item.type, item.target) == ("node", "reframe") and item.id.startswith("gen_")
    assert item.overall_status in ("succeeded", "running", "queued") and item.created_at
    everything = list(client.iter_runs(page_size=1, target="reframe"))
    assert len(everything) >= 2 and len({r.id for r in everything}) == len(everything)
    succeeded = client.runs(status="succeeded", limit=100)
    assert all(r.overall_status == "succeeded" for r in succeeded.runs)
    with pytest.raises(InvalidInput):
        client.runs(status="sleeping")


def test_idempotent_runs(client: Client, png: str) -> None:
    first = client.run("upscale", {"image": png}, idempotency_key="py-idem-1")
    second = client.run("upscale", {"image": png}, idempotency_key="py-idem-1")
    assert first.id == second.id
    with pytest.raises(IdempotencyKeyReused) as info:
        client.run("upscale", {"image": png, "scale": 4}, idempotency_key="py-idem-1")
    assert info.value.status_code == 422
    first.wait(**WAIT)


# --- workflows ----------------------------------------------------------------------------------


def test_save_describe_run_and_inspect_a_workflow(client: Client, png: str, saved_workflow: str) -> None:
    described = client.workflow(saved_workflow)
    assert described.name == saved_workflow
    assert set(described.inputs.mandatory) == {"photo"}
    assert described.inputs.linked == {"Square.image": "Up.output"}
    assert described.outputs == {"big": "Up.output", "square": "Square.output"}
    assert any(w.name == saved_workflow and not w.system_workflow for w in client.workflows())
    assert client.estimate_workflow(saved_workflow, {"photo": png}).tokens == 2

    run = client.run_workflow(saved_workflow, {"photo": png, "Square.image": png})
    assert run.id.startswith("wr_")
    assert run.warnings, "a value for a linked parameter is ignored with a warning"
    final = run.wait(**WAIT)
    assert isinstance(final, WorkflowRunStatus) and final.succeeded
    assert set(final.outputs) == {"big", "square"} and all(isinstance(v, str) for v in final.outputs.values())
    assert set(final.nodes) == {"Up", "Square"}
    up = final.nodes["Up"]
    assert up.status == "succeeded" and up.model_name == "upscale" and up.id.startswith("gen_")
    node = client.status(up.id)
    assert isinstance(node, NodeRunStatus) and node.workflow_run_id == run.id and paths(node.output) == paths(up.output)


def test_workflow_errors(client: Client, saved_workflow: str) -> None:
    with pytest.raises(MissingInputs) as missing:
        client.run_workflow(saved_workflow, {})
    assert missing.value.missing == ["photo"] and missing.value.status_code == 400
    with pytest.raises(WorkflowNotFound):
        client.workflow("no such workflow")
    with pytest.raises(WorkflowNotFound):
        client.run_workflow("no such workflow", {})
    with pytest.raises(InvalidRequest):
        client.run_workflow("", {})
    template = next(w.name for w in client.workflows() if w.system_workflow)
    with pytest.raises(ReadOnlyTemplate) as read_only:
        client.delete_workflow(template)
    assert read_only.value.status_code == 409


def test_validate_workflow(client: Client) -> None:
    ok = client.validate_workflow(WORKFLOW, name="draft")
    assert ok.valid and ok.errors == []
    assert ok.description is not None and ok.description.name == "draft"
    assert ok.estimate is not None and ok.estimate.tokens == 2 and set(ok.estimate.nodes) == {"Up", "Square"}
    broken = dict(WORKFLOW, nodes=[{"name": "Up", "tool": "upscale", "links": {"image": "Nowhere.output"}}])
    bad = client.validate_workflow(broken)
    assert not bad.valid and bad.errors and bad.description is None and bad.estimate is None
    assert all(e.reason for e in bad.errors)


def test_save_replace_and_delete_a_workflow(client: Client) -> None:
    name = "py client temp 100%"
    first = client.save_workflow(name, WORKFLOW)
    assert first.name == name and set(first.outputs) == {"big", "square"}
    changed = dict(WORKFLOW, outputs={"only": "Square.output"})
    assert set(client.save_workflow(name, changed).outputs) == {"only"}
    assert set(client.workflow(name).outputs) == {"only"}
    deleted = client.delete_workflow(name)
    assert deleted.deleted and deleted.name == name
    with pytest.raises(WorkflowNotFound):
        client.delete_workflow(name)


# --- errors ------------------------------------------------------------------------------------


def test_request_errors(client: Client, png: str) -> None:
    with pytest.raises(UnknownTool) as unknown:
        client.run("no_such_tool", {})
    assert unknown.value.status_code == 404
    with pytest.raises(InvalidInput) as invalid:
        client.run("upscale", {"image": png, "scale": 3})
    assert invalid.value.field == "scale" and invalid.value.status_code == 422
    with pytest.raises(InvalidImage):
        client.run("upscale", {"image": "data:image/png;base64," + base64.b64encode(b"not an image").decode()})
    with pytest.raises(RunNotFound):
        client.status("gen_doesnotexist00000")
    with pytest.raises(RunNotFound):
        client.cancel("wr_doesnotexist000000")


def test_unauthorized_and_insufficient_tokens(server: Server, png: str) -> None:
    with Client(server.base_url, "atl_" + "x" * 40) as stranger:
        with pytest.raises(Unauthorized) as info:
            stranger.tools()
        assert info.value.status_code == 401
    with Client(server.base_url, server.poor_key) as poor:
        assert poor.balance() == 0
        with pytest.raises(InsufficientTokens) as broke:
            poor.run("upscale", {"image": png})
        assert (broke.value.required, broke.value.balance, broke.value.status_code) == (1, 0, 402)
        assert poor.runs().runs == []


def test_a_price_over_a_keys_spend_limit_is_spend_limit_reached_and_usage_shows_it(server: Server, png: str) -> None:
    created = json.loads(server.admin("key", "create", "default", "--json"))
    server.admin("key", "limit", created["api_key"][:8], "--daily", "1", "--concurrency", "3")
    with Client(server.base_url, created["api_key"]) as limited:
        # Without the result cache: a copy of earlier work gives its tokens back.
        limited.run("upscale", {"image": png}, cache=False).wait(**WAIT)
        with pytest.raises(SpendLimitReached) as capped:
            limited.run("upscale", {"image": png}, cache=False)
        error = capped.value
        assert (error.status_code, error.applies_to, error.period) == (402, "key", "day")
        assert (error.limit, error.used, error.required) == (1, 1, 1)
        assert error.resets_at and error.resets_at.endswith("T00:00:00.000000")
        usage = limited.usage()
        assert (usage.key.daily.limit, usage.key.daily.used, usage.key.daily.resets_at) == (1, 1, error.resets_at)
        assert (usage.key.running_nodes_limit, usage.key.running_nodes, usage.key.settings.daily) == (3, 0, 1)
        assert usage.account.daily.limit is None and usage.account.daily.used >= 1
        assert usage.account.running_nodes is None


def test_the_audit_log_lists_the_accounts_changes_newest_first(server: Server, client: Client) -> None:
    client.rotate_webhook_secret()
    page = client.audit(action="webhook_secret.", limit=5)
    assert page.entries, page
    entry = page.entries[0]
    assert (entry.action, entry.actor, entry.address) == ("webhook_secret.rotated", "key:" + server.api_key[:8], "127.0.0.1")
    assert len(entry.hash) == 64 and len(entry.prev_hash) == 64
    everything = client.audit(limit=500)
    assert [e.id for e in everything.entries] == sorted((e.id for e in everything.entries), reverse=True)


def test_replaying_a_delivery_the_run_does_not_have_is_delivery_not_found(client: Client, png: str) -> None:
    run = client.run("upscale", {"image": png})
    run.wait(**WAIT)
    assert client.webhook_deliveries(run.id) == []
    with pytest.raises(DeliveryNotFound) as missing:
        client.replay_delivery(run.id, "msg_nosuch")
    assert missing.value.status_code == 404


def test_a_key_without_the_scope_is_forbidden_and_changes_nothing(server: Server, png: str) -> None:
    created = json.loads(server.admin("key", "create", "poor", "--scopes", "read", "--json"))
    assert created["scopes"] == ["read"]
    with Client(server.base_url, created["api_key"]) as reader:
        assert reader.balance() == 0
        with pytest.raises(Forbidden) as refused:
            reader.run("upscale", {"image": png})
        assert refused.value.status_code == 403
        assert "'run' scope" in str(refused.value)
        with pytest.raises(Forbidden):
            reader.save_workflow("not-saved", {"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"o": "Up.output"}})
        assert reader.runs().runs == []
        assert all(w.name != "not-saved" for w in reader.workflows())


# --- v2 ------------------------------------------------------------------------------------------


def test_v2_families(client: Client, png: str) -> None:
    tryon = client.v2_run("tryon", {"category": "top", "model_image": png, "garment_image": png, "model_name": "Beta"})
    pro = client.v2_run("tryon_pro", 
        {"category": "dress", "model_image": png, "garment_image": png, "model_name": "Pro Fit", "garment_size": "M"}
    )
    model = client.v2_run("virtual_model", 
        {
            "model_name": "Standard",
            "ethnicity": "any",
            "gender": "Female",
            "dresstype": "summer dress",
            "background": "studio",
            "num_outputs": 1,
        }
    )
    fabric = client.v2_run("fabric", {"category": "top", "model_image": png, "fabric_description": "red stripes"})
    sketch = client.v2_run("sketch_to_dress", {"image": png})
    for run in (tryon, pro, model, fabric, sketch):
        assert run.id.startswith("gen_")

    t = tryon.wait(**WAIT)
    assert isinstance(t, V2Status) and t.status == "completed" and t.succeeded
    assert isinstance(t.output, list) and len(t.output) == 1
    assert t.input is not None and t.input["model_image"] == "<base64>" and t.model_name == "Beta"
    p = pro.wait(**WAIT)
    assert p.succeeded and p.model_name == "Pro Fit"
    m = model.wait(**WAIT)
    assert m.succeeded and isinstance(m.output, list) and len(m.output) == 1
    f = fabric.wait(**WAIT)
    assert f.succeeded and isinstance(f.output, str) and f.urls == [f.output]
    s = sketch.wait(**WAIT)
    assert s.succeeded and s.error is None

    assert paths(client.v2_status("tryon", tryon.id).output) == paths(t.output)
    assert paths(client.v2_status("fabric", fabric.id).output) == paths(f.output)
    assert client.v2_status("tryon_pro", pro.id).status == "completed"
    assert client.v2_status("virtual_model", model.id).status == "completed"
    assert client.v2_status("sketch_to_dress", sketch.id).status == "completed"
    # A family's status endpoint answers only its own runs.
    with pytest.raises(RunNotFound):
        client.v2_status("tryon", fabric.id)
    # A v2 run is a v3 node run too.
    v3 = client.status(tryon.id)
    assert isinstance(v3, NodeRunStatus) and v3.model_name == "virtual_tryon" and paths(v3.output) == paths(t.output)


def test_v2_errors_and_unknown_family(client: Client, png: str) -> None:
    with pytest.raises(InvalidInput):
        client.v2_run("tryon_pro", {"category": "dress", "model_image": png, "garment_image": png, "model_name": "Ultra"})
    with pytest.raises(ValueError):
        client.v2_run("teleport", {})


# --- the async client -----------------------------------------------------------------------------


def test_async_client_end_to_end(server: Server, png: str, saved_workflow: str) -> None:
    async def main() -> None:
        async with AsyncClient(server.base_url, server.api_key) as client:
            tools, balance, workflows = await asyncio.gather(client.tools(), client.balance(), client.workflows())
            assert any(t.name == "reframe" for t in tools) and balance > 0 and workflows
            runs = await asyncio.gather(
                client.run("reframe", {"image": png, "aspect_ratio": "9:16"}),
                client.run_workflow(saved_workflow, {"photo": png}),
                client.v2_run("sketch_to_dress", {"image": png}),
            )
            node_final, wf_final, v2_final = await asyncio.gather(*(r.wait(**WAIT) for r in runs))
            assert isinstance(node_final, NodeRunStatus) and node_final.succeeded
            assert isinstance(wf_final, WorkflowRunStatus) and wf_final.succeeded
            assert isinstance(v2_final, V2Status) and v2_final.succeeded
            described = await client.workflow(saved_workflow)
            assert described.name == saved_workflow
            page = [r async for r in client.iter_runs(page_size=2, target="reframe")]
            assert any(r.id == runs[0].id for r in page)
            with pytest.raises(RunNotFound):
                await client.status("gen_doesnotexist00000")
            slow = await client.run("upscale", {"image": png, "scale": 4})
            await slow.cancel()
            assert (await slow.wait(**WAIT)).canceled

    asyncio.run(main())


# --- uploads --------------------------------------------------------------------------------------


def test_an_upload_is_named_in_a_run_by_both_clients(client: Client, server: Server, tmp_path: Any) -> None:
    from helpers import png_bytes

    image = png_bytes(40, 30)
    upload = client.upload(image)
    assert (upload.format, upload.width, upload.height, upload.size) == ("png", 40, 30, len(image))
    assert upload.input == "upload:" + upload.id and len(upload.id) == 64
    assert client.get_upload(upload.id) == upload
    path = tmp_path / "garment.png"
    path.write_bytes(image)
    assert client.upload(path).id == upload.id, "the same bytes are the same upload"
    final = client.run("upscale", {"image": upload.input, "scale": 2}).wait(**WAIT)
    assert isinstance(final, NodeRunStatus) and final.overall_status == "succeeded", final.raw

    async def from_async() -> None:
        async with AsyncClient(server.base_url, server.api_key) as aclient:
            again = await aclient.upload(image)
            assert again.id == upload.id
            assert (await aclient.get_upload(upload.id)).input == upload.input

    asyncio.run(from_async())


def test_upload_refusals_are_typed(client: Client) -> None:
    with pytest.raises(InvalidImage) as bad:
        client.upload(b"not an image")
    assert bad.value.field == "file" and bad.value.status_code == 422
    with pytest.raises(UploadNotFound) as missing:
        client.get_upload("0" * 64)
    assert missing.value.status_code == 404
    with pytest.raises(UploadNotFound) as in_run:
        client.run("upscale", {"image": "upload:" + "0" * 64})
    assert in_run.value.field == "image"


# --- batches ------------------------------------------------------------------------------------


def test_a_batch_runs_each_item_and_its_results_download_with_both_clients(
    client: Client, server: Server, tmp_path: Any
) -> None:
    import json
    import time
    import zipfile

    from helpers import png_bytes

    garment = client.upload(png_bytes(30, 20)).input
    items = [{"input": {"image": garment}, "ref": "sku-1"}, {"input": {"image": garment, "scale": 4}, "ref": "sku-2"}]
    batch = client.create_batch("upscale", items, input={"scale": 2}, idempotency_key="py-batch-1")
    assert batch.id.startswith("bat_") and batch.status == "running" and batch.priority == "bulk"
    assert (batch.items.total, batch.tokens.price) == (2, 3)
    assert client.create_batch("upscale", items, input={"scale": 2}, idempotency_key="py-batch-1").id == batch.id
    # Followed by its events to its end: progress while it runs, then its final state.
    events = list(client.batch_events(batch.id))
    assert events and events[-1].final and all(e.event == "progress" for e in events[:-1]), events
    assert all(e.batch.running for e in events[:-1])
    batch = client.batch(batch.id)
    assert events[-1].batch == batch
    assert (batch.status, batch.items.succeeded, batch.progress) == ("finished", 2, 1.0), batch.raw
    assert client.batch_webhook_deliveries(batch.id) == []
    with pytest.raises(BatchNotFound):
        list(client.batch_events("bat_0000000000000000"))
    page = client.batch_items(batch.id, status="succeeded", limit=1)
    assert [i.ref for i in page.items] == ["sku-1"] and page.next_after == 0
    assert page.items[0].output and page.items[0].run_id
    assert client.batches().batches[0].id == batch.id
    assert client.retry_batch(batch.id).retried == 0
    lines = tmp_path / "results.jsonl"
    assert client.download_batch_results(batch.id, lines) > 0
    assert [json.loads(line)["ref"] for line in lines.read_text().splitlines()] == ["sku-1", "sku-2"]
    archive = tmp_path / "results.zip"
    client.download_batch_zip(batch.id, archive)
    assert sorted(zipfile.ZipFile(archive).namelist()) == ["sku-1/output.png", "sku-2/output.png"]
    with pytest.raises(BatchNotFound):
        client.batch("bat_0000000000000000")

    items_path = tmp_path / "items.csv"
    items_path.write_text(f"ref,image,scale\nc-1,{garment},2\n")
    items_file = client.upload(items_path)
    assert items_file.format == "csv"
    from_file = client.create_batch("upscale", items_file=items_file.input)
    assert (from_file.items.total, from_file.tokens.price) == (1, 1)

    async def from_async() -> None:
        async with AsyncClient(server.base_url, server.api_key) as aclient:
            assert (await aclient.batch(batch.id)).items.succeeded == 2
            finals = [e async for e in aclient.batch_events(batch.id)]
            assert len(finals) == 1 and finals[0].final and finals[0].batch.items.succeeded == 2
            assert (await aclient.cancel_batch(batch.id)).status == "finished", "a finished batch stays so"
            out = tmp_path / "async.zip"
            await aclient.download_batch_zip(batch.id, out)
            assert len(zipfile.ZipFile(out).namelist()) == 2
            with pytest.raises(BatchNotFound):
                await aclient.download_batch_results("bat_0000000000000000", tmp_path / "none.jsonl")
            with pytest.raises(InvalidInput) as inline:
                await aclient.create_batch("upscale", [{"input": {"image": "data:image/png;base64,iVBORw0KGgo="}}])
            assert inline.value.field == "items[0].image"

    asyncio.run(from_async())


def test_the_same_work_again_comes_from_the_result_cache_unless_told_not_to(client: Client) -> None:
    from helpers import png_bytes

    image = client.upload(png_bytes(36, 28)).input
    first = client.run("upscale", {"image": image, "scale": 2, "seed": 11}).wait(**WAIT)
    again = client.run("upscale", {"image": image, "scale": 2, "seed": 11}).wait(**WAIT)
    assert isinstance(again, NodeRunStatus) and again.cached_from == first.run_id, again.raw
    assert again.tokens == 0
    fresh = client.run("upscale", {"image": image, "scale": 2, "seed": 11}, cache=False).wait(**WAIT)
    assert isinstance(fresh, NodeRunStatus) and fresh.cached_from is None and fresh.tokens == 1


def test_direct_uploads_need_s3_storage(client: Client) -> None:
    # The test server keeps its files on local disk: a direct upload is refused, and says
    # what to use instead.
    from helpers import png_bytes

    with pytest.raises(AtelierError) as refused:
        client.upload_direct(png_bytes(4, 4))
    assert refused.value.name == "Conflict" and refused.value.status_code == 409
    assert "POST /api/v3/uploads" in refused.value.message


def test_a_finished_run_is_deleted_and_then_reads_deleted(client: Client, png: str) -> None:
    run = client.run("upscale", {"image": png})
    run.wait(**WAIT)
    deletion = client.delete_run(run.id)
    assert deletion.id == run.id and deletion.deleted and deletion.deleted_at
    assert client.delete_run(run.id).deleted_at == deletion.deleted_at
    with pytest.raises(Deleted) as caught:
        client.status(run.id)
    assert caught.value.status_code == 410
    with pytest.raises(RunNotFound):
        client.delete_run("gen_zzzzzzzzzzzzzzzz")


def test_a_finished_batch_is_deleted_with_its_runs_and_then_reads_deleted(client: Client) -> None:
    from helpers import png_bytes

    image = client.upload(png_bytes(12, 10)).input
    batch = client.create_batch("upscale", [{"input": {"image": image}, "ref": "del-1"}])
    assert list(client.batch_events(batch.id))[-1].batch.status == "finished"
    run_id = client.batch_items(batch.id).items[0].run_id
    deletion = client.delete_batch(batch.id)
    assert deletion.id == batch.id and deletion.deleted and deletion.deleted_at
    with pytest.raises(Deleted) as caught:
        client.batch(batch.id)
    assert caught.value.status_code == 410
    with pytest.raises(Deleted):
        client.status(run_id)
    assert client.delete_batch(batch.id).deleted_at == deletion.deleted_at
    with pytest.raises(BatchNotFound):
        client.delete_batch("bat_0000000000000000")
