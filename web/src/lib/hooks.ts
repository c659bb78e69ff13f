import { useCallback, useEffect, useRef, useState } from 'react';
import { get, type Batch, type RunStatus } from './api';

/** Loads `fn` when `deps` change; `reload` loads again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const load = useCallback(() => {
    const mine = ++seq.current;
    setLoading(true);
    fn().then(
      (value) => {
        if (mine !== seq.current) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (e) => {
        if (mine !== seq.current) return;
        setError(e);
        setLoading(false);
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    load();
  }, [load]);
  return { data, error, loading, reload: load, setData };
}

/** Calls `fn` every `ms` while `active` and the page is visible. */
export function useInterval(fn: () => void, ms: number, active: boolean) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (!active) return;
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') saved.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms, active]);
}

/**
 * Follows run `id` while `active`, calling `onStatus` with its status at each change: from the
 * run's event stream (`/console/api/v3/status/{id}/events`, which the session's cookie
 * opens), reading the status again when a node changes and taking the final status from the
 * stream's last event. Where the stream cannot be opened, it polls every `fallbackMs`.
 */
export function useRunFollow(
  id: string | null,
  active: boolean,
  onStatus: (status: RunStatus) => void,
  fallbackMs = 1000,
) {
  const saved = useRef(onStatus);
  saved.current = onStatus;
  const [streaming, setStreaming] = useState(typeof EventSource !== 'undefined');
  useEffect(() => {
    if (!id || !active || !streaming) return;
    const path = `/v3/status/${encodeURIComponent(id)}`;
    const source = new EventSource(`/console/api${path}/events`);
    // One read at a time; a change during it reads again once it is done.
    let reading = false;
    let again = false;
    const read = () => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      get<RunStatus>(path).then(
        (s) => saved.current(s),
        () => {},
      ).finally(() => {
        reading = false;
        if (again) {
          again = false;
          read();
        }
      });
    };
    source.addEventListener('node', read);
    source.addEventListener('status', (event) => {
      // The final status; the server ends the stream, which the browser would reopen.
      source.close();
      saved.current(JSON.parse((event as MessageEvent<string>).data) as RunStatus);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) setStreaming(false);
    };
    return () => source.close();
  }, [id, active, streaming]);
  usePoll<RunStatus>(id && `/v3/status/${encodeURIComponent(id)}`, fallbackMs, active && !streaming, (s) =>
    saved.current(s),
  );
}

/** Reads `path` (of the console's API) every `ms` while `active`, handing each answer to
 * `onValue`; a failed read is skipped (the next one tries again). */
function usePoll<T>(path: string | null, ms: number, active: boolean, onValue: (value: T) => void) {
  const saved = useRef(onValue);
  saved.current = onValue;
  useInterval(
    () => {
      if (!path) return;
      get<T>(path).then(
        (value) => saved.current(value),
        () => {},
      );
    },
    ms,
    !!path && active,
  );
}

/**
 * Follows batch `id` while `active`, calling `onBatch` with the batch at each change of its
 * counts: from its event stream (`/console/api/v3/batches/{id}/events`), whose `progress`
 * and final `status` events carry the batch itself. Where the stream cannot be opened, it
 * polls every `fallbackMs`.
 */
export function useBatchFollow(id: string, active: boolean, onBatch: (batch: Batch) => void, fallbackMs = 2000) {
  const saved = useRef(onBatch);
  saved.current = onBatch;
  const [streaming, setStreaming] = useState(typeof EventSource !== 'undefined');
  useEffect(() => {
    if (!active || !streaming) return;
    const source = new EventSource(`/console/api/v3/batches/${encodeURIComponent(id)}/events`);
    const take = (event: Event) => saved.current(JSON.parse((event as MessageEvent<string>).data) as Batch);
    source.addEventListener('progress', take);
    source.addEventListener('status', (event) => {
      // The last event; the server ends the stream, which the browser would reopen.
      source.close();
      take(event);
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) setStreaming(false);
    };
    return () => source.close();
  }, [id, active, streaming]);
  usePoll<Batch>(`/v3/batches/${encodeURIComponent(id)}`, fallbackMs, active && !streaming, (b) =>
    saved.current(b),
  );
}
