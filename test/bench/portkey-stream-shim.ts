/**
 * Preloaded into the Portkey gateway (`node --import`) so its streams work at all here. Portkey
 * wraps a streamed answer with `new Response(stream, upstreamResponse)` and then appends headers
 * to it; with the @hono/node-server hoisted in this repository (1.19, Gantry's own dependency) that
 * lightweight Response keeps fetch's immutable Headers, so every stream fails with
 * "TypeError: immutable" and a 500. Giving streamed upstream answers mutable headers is the
 * smallest change that lets Portkey stream; JSON answers are left exactly as they were.
 */
const upstreamFetch = globalThis.fetch;

const shimmed: typeof fetch = async (input, init) => {
  const res = await upstreamFetch(input, init);
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return res;
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: new Headers(res.headers) });
};

globalThis.fetch = shimmed;
