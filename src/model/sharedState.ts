// One frozen copy of each state that is nothing but its kind, and of the empty list: 10,000
// watches `running` share one object instead of holding one each.
const SHARED_STATES = new Map<string, { kind: string }>();

/** A state that is nothing but its kind, as its one frozen copy (states are replaced, never changed); else as it is. */
export function sharedState<S extends { kind: string }>(state: S): S {
  if (Object.keys(state).length !== 1) return state;
  if (!SHARED_STATES.has(state.kind)) SHARED_STATES.set(state.kind, Object.freeze({ kind: state.kind }));
  return SHARED_STATES.get(state.kind) as S;
}

/**
 * The empty list a new (or loaded) watch starts with, one for all (most watches never fail). A
 * watch's lists are replaced, never changed in place (structuredClone's copies share one); frozen,
 * so a change in place would throw.
 */
const NONE: readonly never[] = Object.freeze([]);

export function noEntries<T>(): T[] {
  return NONE as unknown as T[];
}
