// What a signed-in page is given: the session and a way to read it again.

import type { Session } from './api';

export interface SessionContext {
  session: Session;
  /** Reads the balance (and the session) again. */
  refresh: () => void;
}
