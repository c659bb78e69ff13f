"""The Celery peer of bench/scheduler.py: a no-op task, chained and queued the way Atelier
chains and queues no-op nodes, on a Redis broker and result backend.

The app (`celery -A celery_dag worker`, run with bench/peers as the working directory):

    CELERY_BENCH_REDIS=redis://127.0.0.1:6379/13 celery -A celery_dag worker --concurrency 4

The driver functions (`chain_timings`, `queue_timings`) are imported by bench/scheduler.py,
which starts and stops the worker processes itself. Celery's defaults are kept (prefork
pool, prefetch multiplier 4, results stored in Redis), as a user would run it.

Each task records when its body started and ended (time.time(), microseconds), and passes
the list on along a chain, so that the delay between one task's end and the next one's start
is measured the same way as between two Atelier nodes.
"""

import json
import os
import time

from celery import Celery, chain

REDIS = os.environ.get("CELERY_BENCH_REDIS", "redis://127.0.0.1:6379/13")

app = Celery("celery_dag", broker=REDIS, backend=REDIS)
app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"],
                broker_connection_retry_on_startup=True, worker_hijack_root_logger=False)


def _us():
    return int(time.time() * 1_000_000)


@app.task(name="noop")
def noop(timings=None):
    """Does nothing; returns `timings` with this task's [start, end] (microseconds) added."""
    start = _us()
    out = list(timings or [])
    out.append([start, _us()])
    return out


def chain_timings(length, timeout=120):
    """Runs one chain of `length` no-op tasks; returns the [start, end] of each, in order."""
    result = chain(noop.s([]), *[noop.s() for _ in range(length - 1)]).apply_async()
    return result.get(timeout=timeout, interval=0.005)


def submit(count):
    """Queues `count` independent no-op tasks; returns their ids."""
    return [noop.apply_async(([],)).id for _ in range(count)]


def queue_timings(ids, timeout=300):
    """Waits until every task in `ids` has stored its result; returns their [start, end]."""
    client = app.backend.client
    keys = [app.backend.get_key_for_task(i) for i in ids]
    deadline = time.time() + timeout
    while True:
        values = client.mget(keys)
        if all(v is not None for v in values):
            break
        if time.time() > deadline:
            raise TimeoutError(f"{sum(v is None for v in values)} of {len(ids)} Celery tasks unfinished")
        time.sleep(0.05)
    return [json.loads(v)["result"][0] for v in values]
