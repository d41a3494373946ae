/** Time goes through this port so that tests can move it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to (tests). */
export class ManualClock implements Clock {
  #ms: number;
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#ms = startMs;
  }
  now(): number {
    return this.#ms;
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(ms: number): void {
    this.#ms = ms;
  }
}
