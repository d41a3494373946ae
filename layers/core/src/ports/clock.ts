/** Time goes through this port so that tests can move it (and skip the waiting of backoffs). */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits `ms` milliseconds; rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** A clock that only moves when told to, or by the sleeps it is asked for (tests). */
export class ManualClock implements Clock {
  #ms: number;
  /** Every sleep requested, in order. */
  readonly sleeps: number[] = [];
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#ms = startMs;
  }
  now(): number {
    return this.#ms;
  }
  sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.#ms += ms;
    return Promise.resolve();
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(ms: number): void {
    this.#ms = ms;
  }
}
