import { describe, expect, it } from 'vitest';
import { shortcutOf, typedInto, type KeyPress } from './shortcuts';

const press = (key: string, mods: Partial<Omit<KeyPress, 'key'>> = {}): KeyPress => ({
  key,
  ctrlKey: false,
  metaKey: false,
  shiftKey: false,
  ...mods,
});

describe('shortcuts', () => {
  it('reads Ctrl and Cmd alike, and Shift where it matters', () => {
    for (const mod of [{ ctrlKey: true }, { metaKey: true }]) {
      expect(shortcutOf(press('z', mod))).toBe('undo');
      expect(shortcutOf(press('Z', { ...mod, shiftKey: true }))).toBe('redo');
      expect(shortcutOf(press('y', mod))).toBe('redo');
      expect(shortcutOf(press('c', mod))).toBe('copy');
      expect(shortcutOf(press('v', mod))).toBe('paste');
      expect(shortcutOf(press('b', mod))).toBe('bypass');
      expect(shortcutOf(press('s', mod))).toBe('save');
      expect(shortcutOf(press('f', { ...mod, shiftKey: true }))).toBeNull();
    }
    expect(shortcutOf(press('F', { shiftKey: true }))).toBe('fit');
    expect(shortcutOf(press('L', { shiftKey: true }))).toBe('layout');
  });

  it('leaves plain typing and unknown combinations alone', () => {
    for (const key of ['z', 'c', 'v', 's', 'f', 'l', 'Delete', 'Backspace', 'Enter']) {
      expect(shortcutOf(press(key))).toBeNull();
    }
    expect(shortcutOf(press('x', { ctrlKey: true }))).toBeNull();
    expect(shortcutOf(press('a', { shiftKey: true }))).toBeNull();
  });

  it('keys typed into a field are the field’s', () => {
    for (const tagName of ['INPUT', 'TEXTAREA', 'SELECT']) expect(typedInto({ tagName } as unknown as EventTarget)).toBe(true);
    expect(typedInto({ tagName: 'DIV', isContentEditable: true } as unknown as EventTarget)).toBe(true);
    expect(typedInto({ tagName: 'DIV', isContentEditable: false } as unknown as EventTarget)).toBe(false);
    expect(typedInto(null)).toBe(false);
  });
});
