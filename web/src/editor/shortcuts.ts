// The editor's keyboard shortcuts: which key does what, and the listener that calls the
// page's handlers. Keys typed into a text field are the field's, never a shortcut.

import { useEffect, useRef } from 'react';

export type Shortcut = 'undo' | 'redo' | 'copy' | 'paste' | 'bypass' | 'save' | 'fit' | 'layout';

export interface KeyPress {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
}

/** The shortcut a key press means, or `null`. Ctrl and Cmd are the same modifier. */
export function shortcutOf(e: KeyPress): Shortcut | null {
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.toLowerCase();
  if (mod) {
    if (key === 'z') return e.shiftKey ? 'redo' : 'undo';
    if (key === 'y') return 'redo';
    if (key === 'c') return 'copy';
    if (key === 'v') return 'paste';
    if (key === 'b') return 'bypass';
    if (key === 's') return 'save';
    return null;
  }
  if (e.shiftKey && key === 'f') return 'fit';
  if (e.shiftKey && key === 'l') return 'layout';
  return null;
}

/** Whether a key pressed in `el` belongs to it (a text field, a select, editable text). */
export function typedInto(target: EventTarget | null): boolean {
  const el = target as { tagName?: string; isContentEditable?: boolean } | null;
  if (!el) return false;
  return el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || !!el.isContentEditable;
}

/**
 * Calls `handlers[shortcut]` for each shortcut pressed on the page. The browser's own action
 * is kept for copy (the page's text can still be copied); every other shortcut replaces it.
 */
export function useShortcuts(handlers: Record<Shortcut, () => void>) {
  // The latest handlers, without adding and removing the listener on every render.
  const current = useRef(handlers);
  current.current = handlers;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (typedInto(e.target)) return;
      const shortcut = shortcutOf(e);
      if (!shortcut) return;
      if (shortcut !== 'copy') e.preventDefault();
      current.current[shortcut]();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}
