// What a signed-in page is given: the session and a way to read it again.

import type { Scope, Session } from './api';

export interface SessionContext {
  session: Session;
  /** Reads the balance (and the session) again. */
  refresh: () => void;
}

/**
 * Whether the key this session signed in with holds `scope`. Pages hide what it does not
 * allow; the server refuses it anyway (403 Forbidden).
 */
export function can(session: Session, scope: Scope): boolean {
  return session.scopes.includes(scope);
}
