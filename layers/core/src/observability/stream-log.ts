/**
 * Turns a streamed chat answer (its raw SSE text, kept bounded while it passed through) into the
 * completion it amounted to, for the request log: the text and tool calls each choice built up,
 * its finish reason, and the usage when the stream carried it. Runs after the response, never on
 * the request path. A stream of another shape (the Responses API, say) is kept as its events.
 */

interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface ChunkShape {
  id?: string;
  model?: string;
  object?: string;
  created?: number;
  usage?: unknown;
  choices?: Array<{ index?: number; delta?: { role?: string; content?: string | null; tool_calls?: ToolCallDelta[] }; finish_reason?: string | null }>;
}

interface Choice {
  index: number;
  message: { role: string; content: string; tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }> };
  finish_reason: string | null;
}

function events(text: string): unknown[] {
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (!data || data === '[DONE]') continue;
    try {
      out.push(JSON.parse(data));
    } catch {
      // a truncated last event: the log keeps what parsed
    }
  }
  return out;
}

export function assembleStream(text: string): unknown {
  const parsed = events(text) as ChunkShape[];
  if (!parsed.some((e) => e && e.object === 'chat.completion.chunk')) return { stream: true, events: parsed };
  const choices = new Map<number, Choice>();
  let id: string | undefined;
  let model: string | undefined;
  let created: number | undefined;
  let usage: unknown;
  for (const e of parsed) {
    id ??= e.id;
    model ??= e.model;
    created ??= e.created;
    if (e.usage) usage = e.usage;
    for (const c of e.choices ?? []) {
      const index = c.index ?? 0;
      let choice = choices.get(index);
      if (!choice) {
        choice = { index, message: { role: 'assistant', content: '' }, finish_reason: null };
        choices.set(index, choice);
      }
      if (c.delta?.role) choice.message.role = c.delta.role;
      if (typeof c.delta?.content === 'string') choice.message.content += c.delta.content;
      for (const t of c.delta?.tool_calls ?? []) {
        const calls = (choice.message.tool_calls ??= []);
        const at = t.index ?? calls.length;
        const call = (calls[at] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
        if (t.id) call.id = t.id;
        if (t.type) call.type = t.type;
        if (t.function?.name) call.function.name += t.function.name;
        if (t.function?.arguments) call.function.arguments += t.function.arguments;
      }
      if (c.finish_reason) choice.finish_reason = c.finish_reason;
    }
  }
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    stream: true,
    choices: [...choices.values()].sort((a, b) => a.index - b.index),
    ...(usage ? { usage } : {}),
  };
}
