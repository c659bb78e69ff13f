// The API reference (/console/docs): the service's OpenAPI document rendered by Scalar
// (bundled from npm, web/vendor), whose "Test request" runs as the signed-in account: a
// request to /api/… is sent to /console/api/… with the session's cookie and CSRF token,
// never with an API key.

import './docs.css';

interface ScalarGlobal {
  createApiReference: (target: string, config: Record<string, unknown>) => unknown;
}

const status = document.getElementById('docs-status')!;

/** The same request, as the console sends it. */
export function throughConsole(input: string, base: string): string {
  const url = new URL(input, base);
  if (url.origin === new URL(base).origin && (url.pathname.startsWith('/api/v3/') || url.pathname.startsWith('/api/v2/'))) {
    url.pathname = `/console${url.pathname}`;
  }
  return url.toString();
}

async function start() {
  const session = await fetch('/console/api/session', { credentials: 'same-origin' });
  if (session.status === 401) {
    window.location.replace('/console/');
    return;
  }
  const { csrf_token: csrf, account } = (await session.json()) as { csrf_token: string; account: string };
  status.textContent = `Requests run as ${account}.`;
  const scalar = (window as unknown as { Scalar?: ScalarGlobal }).Scalar;
  if (!scalar) {
    status.textContent = 'The API reference viewer did not load.';
    return;
  }
  const customFetch = (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.toString() : input.url;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.delete('x-api-key');
    if ((init?.method ?? 'GET').toUpperCase() !== 'GET') headers.set('x-csrf-token', csrf);
    return fetch(throughConsole(url, window.location.origin), { ...init, headers, credentials: 'same-origin' });
  };
  (window as unknown as { atelierFetch: typeof customFetch }).atelierFetch = customFetch;
  scalar.createApiReference('#reference', {
    url: '/openapi.json',
    servers: [{ url: window.location.origin, description: 'This service (requests run as the signed-in account)' }],
    customFetch,
    withDefaultFonts: false,
    hideClientButton: false,
    hideDarkModeToggle: true,
    showDeveloperTools: 'never',
    agent: { disabled: true },
    telemetry: false,
  });
}

void start();
