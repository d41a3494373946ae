/**
 * docs/realtime.md's examples of the openai SDK's realtime client (`OpenAIRealtimeWS`) through
 * Gantry, as the page shows them: test/e2e/realtime-openai-sdk.test.ts runs them against a local
 * Gantry and checks that each block of the page is found here word for word.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

/** Gantry serving TLS (GW_TLS_CERT, GW_TLS_KEY): the wss:// URL the SDK builds works as it is. */
export function connectOverTls(baseURL: string, gatewayKey: string, certFile: string): Promise<OpenAIRealtimeWS> {
  // baseURL: https://localhost:8787/v1. The API key is the gateway key (sent as `Authorization: Bearer`).
  const client = new OpenAI({ baseURL, apiKey: gatewayKey });
  return OpenAIRealtimeWS.create(client, {
    model: 'gpt-realtime',
    // `options` go to the `ws` client: Gantry's headers, and the self-signed certificate to trust.
    options: { headers: { 'x-gw-provider': '@my-openai' }, ca: readFileSync(certFile) },
  });
}

/** Gantry over plain HTTP (`npm start`): the SDK still asks for wss://, so the socket under it is plain TCP. */
export function connectOverHttp(baseURL: string, gatewayKey: string): Promise<OpenAIRealtimeWS> {
  // baseURL: http://127.0.0.1:8787/v1 (with its port: without one, wss:// means 443).
  const client = new OpenAI({ baseURL, apiKey: gatewayKey });
  // `ws` opens the connection with this instead of a TLS one (its type is that of net.createConnection).
  const plainTcp = ((o: net.TcpNetConnectOpts) => net.connect({ host: o.host, port: Number(o.port) })) as typeof net.createConnection;
  return OpenAIRealtimeWS.create(client, {
    model: 'gpt-realtime',
    options: { headers: { 'x-gw-provider': '@my-openai' }, createConnection: plainTcp },
  });
}

/** One turn of text: the session's instructions, a user message, a response; resolves with the model's text. */
export function ask(rt: OpenAIRealtimeWS, question: string): Promise<string> {
  let answer = '';
  rt.on('response.output_text.delta', (event) => (answer += event.delta));
  return new Promise((resolve, reject) => {
    rt.on('error', reject);
    rt.on('response.done', () => resolve(answer));
    rt.socket.once('open', () => {
      rt.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'], instructions: 'Answer in one sentence.' } });
      rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: question }] } });
      rt.send({ type: 'response.create' });
    });
  });
}
