// Undo and redo, one step per user action: the editor records the state before each action
// (a paste of many nodes, a drag, a rename is one action), not each change React Flow
// reports while it happens.

export class History<T> {
  private past: T[] = [];
  private future: T[] = [];
  constructor(private readonly limit = 100) {}

  /** Records `before`, the state an action is about to change. */
  record(before: T) {
    this.past.push(before);
    if (this.past.length > this.limit) this.past.shift();
    this.future = [];
  }

  /** The state to go back to from `now`, or `null`. */
  undo(now: T): T | null {
    const previous = this.past.pop();
    if (previous === undefined) return null;
    this.future.push(now);
    return previous;
  }

  redo(now: T): T | null {
    const next = this.future.pop();
    if (next === undefined) return null;
    this.past.push(now);
    return next;
  }

  get canUndo() {
    return this.past.length > 0;
  }

  get canRedo() {
    return this.future.length > 0;
  }
}
