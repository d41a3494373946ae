/**
 * A session's GET stream before its calls. The GET stream is where a server sends what answers no
 * call of the client: the SDK's `server.request` during a tool call, as the conformance suite's
 * reference server sends sampling and elicitation, goes there, and is lost (the tool then waits for
 * an answer that never comes) when the stream is not open yet. A client opens it right after
 * `notifications/initialized`, but its next call may overtake it, in the client or inside the
 * gateway (each request authenticates and reads its route on its own). So:
 *
 * - once a session is initialized, its requests wait until its GET stream is open upstream, at
 *   most GRACE_MS (a client that opens none loses that much, once per session);
 * - a GET holds the session's requests that come after it until the server has answered its
 *   headers (the stream is open), at most HOLD_MS.
 *
 * Per instance: the local server and the container see all of a client's requests, while on AWS
 * Lambda each request may run in an instance of its own.
 */

export const GRACE_MS = 200;
export const HOLD_MS = 1_000;
/** Sessions held at once; beyond it a session is not held (never refused). */
const MAX_SESSIONS = 10_000;

interface Gate {
  open: Promise<void>;
  release(): void;
  /** Stops the timer: the gate then opens only when released. */
  hold(): void;
}

const gates = new Map<string, Gate>();

function gate(ms: number): Gate {
  let release!: () => void;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const open = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref?.();
    release = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { open, release, hold: () => clearTimeout(timer) };
}

function install(session: string, g: Gate): void {
  gates.set(session, g);
  void g.open.then(() => {
    if (gates.get(session) === g) gates.delete(session);
  });
}

export interface Turn {
  /** Resolves when the request may go upstream. */
  ready: Promise<void>;
  /** The request reached the server, or failed (a GET: its stream is open, or will not be). */
  sent(): void;
}

const NONE: Turn = { ready: Promise.resolve(), sent: () => undefined };

/** The request's place in its session; take it before anything asynchronous. */
export function takeTurn(session: string | null, method: string): Turn {
  if (session === null) return NONE;
  const current = gates.get(session);
  if (method !== 'GET') return current ? { ready: current.open, sent: NONE.sent } : NONE;
  if (!current && gates.size >= MAX_SESSIONS) return NONE;
  const mine = gate(HOLD_MS);
  install(session, mine);
  // Requests already waiting (for this stream, or an earlier one) now wait for this one to open.
  if (current) {
    current.hold();
    void mine.open.then(current.release);
  }
  return { ready: NONE.ready, sent: mine.release };
}

/** The session was just initialized: its requests wait for its GET stream, at most GRACE_MS. */
export function expectStream(session: string | null): void {
  if (session === null || gates.has(session) || gates.size >= MAX_SESSIONS) return;
  install(session, gate(GRACE_MS));
}

/** Sessions held now (tests). */
export const heldSessions = (): number => gates.size;
