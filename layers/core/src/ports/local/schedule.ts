/**
 * The local runtime's stand-in for EventBridge Scheduler: runs `job` at once and then every
 * `everyMs`, never two runs at a time, on an unref'd timer so it never keeps the process up.
 * Returns the function that stops it.
 */
export function runEvery(everyMs: number, job: () => Promise<unknown>, onError: (err: unknown) => void): () => void {
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    job()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  tick();
  return () => clearInterval(timer);
}
