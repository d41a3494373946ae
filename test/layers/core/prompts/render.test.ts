/**
 * Prompt versions rendered into requests: message-list, text and raw templates, partials (pinned
 * and nested), strict and lenient modes, parameters under hyperparameters, and the compile cache.
 */
import { describe, expect, it } from 'vitest';
import { GantryError } from '../../../../layers/core/src/http/errors.ts';
import { PromptLimitError, PromptRenderer, TemplateValuesError } from '../../../../layers/core/src/prompts/render.ts';
import { workspacePrincipal } from '../../../support/identity.ts';
import { partialVersion, promptVersion, PromptsDouble } from '../../../support/prompts.ts';
import { promptRoutes } from '../../../../layers/core/src/admin/prompts/routes.ts';

const principal = workspacePrincipal();

const MESSAGES = JSON.stringify([
  { role: 'system', content: 'You are {{persona}}. {{>tone}}' },
  { role: 'user', content: [{ type: 'text', text: 'Question: {{question}}' }] },
]);

const thrown = async (p: Promise<unknown>): Promise<GantryError> => {
  try {
    await p;
  } catch (e) {
    return e as GantryError;
  }
  throw new Error('expected a refusal');
};

describe('PromptRenderer', () => {
  const v1 = promptVersion({ template: MESSAGES, model: 'gpt-4o-mini', parameters: { temperature: 0.2, max_tokens: 50 } });
  const v2 = promptVersion({ template: 'Summarise: {{text}}{{>sign@1}}', version: 2, model: 'gpt-4o' });
  const source = new PromptsDouble([v1, v2], [partialVersion('tone', 'Be {{tone}}.{{>sign}}'), partialVersion('sign', ' (Gantry)')]);
  source.pointers.set('greeting@production', 1);
  const renderer = new PromptRenderer(source);

  it('renders a message list: every string a template, quotes in values kept, parameters under hyperparameters', async () => {
    const out = await renderer.render(principal, 'greeting@production', {
      variables: { persona: 'a "careful" editor', question: 'A & B?', tone: 'brief' },
      hyperparameters: { temperature: 0.9, messages: [{ role: 'user', content: 'and more' }] },
    });
    expect(out.version.version).toBe(1);
    expect(out.request).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.9,
      max_tokens: 50,
      messages: [
        { role: 'system', content: 'You are a "careful" editor. Be brief. (Gantry)' },
        { role: 'user', content: [{ type: 'text', text: 'Question: A & B?' }] },
        { role: 'user', content: 'and more' },
      ],
    });
  });

  it('renders a text template as one user message, with a pinned partial version', async () => {
    const out = await renderer.render(principal, 'greeting@2', { variables: { text: 'hello' }, hyperparameters: {} });
    expect(out.request).toEqual({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Summarise: hello (Gantry)' }] });
  });

  it('refuses with a 422 that lists every missing variable and partial (strict is the default)', async () => {
    const broken = new PromptRenderer(new PromptsDouble([promptVersion({ template: '{{a}} {{>nope}} {{b.c}} {{a}}' })]));
    const err = await thrown(broken.render(principal, 'greeting', { variables: {}, hyperparameters: {} }));
    expect(err).toBeInstanceOf(TemplateValuesError);
    expect(err.status).toBe(422);
    expect(err.problems.map((p) => p.path)).toEqual(['partials.nope', 'variables.a', 'variables.b.c']);
    expect(err.message).toContain('variables.a is missing');
  });

  it('renders missing names empty in lenient mode, per request or per prompt', async () => {
    const perRequest = new PromptRenderer(new PromptsDouble([promptVersion({ template: '[{{a}}{{>nope}}]' })]));
    const out = await perRequest.render(principal, 'greeting', { variables: {}, hyperparameters: {}, lenient: true });
    expect(out.request.messages).toEqual([{ role: 'user', content: '[]' }]);
    const perPrompt = new PromptRenderer(new PromptsDouble([promptVersion({ template: '[{{a}}]', lenient: true })]));
    expect((await perPrompt.render(principal, 'greeting', { variables: {}, hyperparameters: {} })).request.messages).toEqual([{ role: 'user', content: '[]' }]);
  });

  it('renders a raw template to the JSON body itself, values escaped into strings and {{{json}}} as it is', async () => {
    const raw = promptVersion({
      isRawTemplate: true,
      model: 'gpt-4o-mini',
      parameters: { temperature: 0 },
      template:
        '{"messages": [{"role": "user", "content": [{"type": "text", "text": "{{q}}"}{{#image}}, {"type": "image_url", "image_url": {"url": "{{image}}"}}{{/image}}]}], "stop": {{{stop}}}}',
    });
    const r = new PromptRenderer(new PromptsDouble([raw]));
    const out = await r.render(principal, 'greeting', { variables: { q: 'say "hi"', image: 'https://x/y.png', stop: '["END"]' }, hyperparameters: {} });
    expect(out.request).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0,
      stop: ['END'],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'say "hi"' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
      ],
    });
  });

  it('answers 422 naming `string` when a raw template does not render to a JSON object', async () => {
    const r = new PromptRenderer(new PromptsDouble([promptVersion({ isRawTemplate: true, template: '{"a": {{{v}}}' })]));
    const err = await thrown(r.render(principal, 'greeting', { variables: { v: '1' }, hyperparameters: {} }));
    expect([err.status, err.problems[0]?.path]).toEqual([422, 'string']);
  });

  it('answers 404 for a prompt the source does not have, and 422 for partials that include each other', async () => {
    const err = await thrown(renderer.render(principal, 'unknown', { variables: {}, hyperparameters: {} }));
    expect([err.status, err.param]).toEqual([404, 'promptId']);
    const loop = new PromptRenderer(
      new PromptsDouble([promptVersion({ template: '{{>a}}' })], [partialVersion('a', 'x{{>b}}'), partialVersion('b', 'y{{>a}}')]),
    );
    const cycle = await thrown(loop.render(principal, 'greeting', { variables: {}, hyperparameters: {} }));
    expect([cycle.status, cycle.problems[0]?.path]).toEqual([422, 'partials']);
  });

  it('compiles a version once: a second render does not parse its template again', async () => {
    const version = promptVersion({ template: 'Hi {{name}}', versionId: 'cached-v1' });
    const r = new PromptRenderer(new PromptsDouble([version]));
    await r.render(principal, 'greeting', { variables: { name: 'a' }, hyperparameters: {} });
    // The version's template changes under the same (immutable) id: the cached compilation is used.
    version.template = 'Bye {{name}}';
    const out = await r.render(principal, 'greeting', { variables: { name: 'b' }, hyperparameters: {} });
    expect(out.request.messages).toEqual([{ role: 'user', content: 'Hi b' }]);
  });

  it('answers 422 naming where a stored template or partial does not parse', async () => {
    const r = new PromptRenderer(new PromptsDouble([promptVersion({ template: '[{"role": "user", "content": "{{#open}}"}]' })]));
    const err = await thrown(r.render(principal, 'greeting', { variables: {}, hyperparameters: {} }));
    expect([err.status, err.problems[0]?.path]).toEqual([422, 'string[0].content']);
    const p = new PromptRenderer(new PromptsDouble([promptVersion({ template: '{{>bad}}' })], [partialVersion('bad', '{{^x}}')]));
    const partial = await thrown(p.render(principal, 'greeting', { variables: {}, hyperparameters: {} }));
    expect([partial.status, partial.problems[0]?.path]).toEqual([422, 'partials.bad']);
  });

  it('refuses a render past its limits with a 422 naming the prompt, its version and the limit', async () => {
    const partials = [partialVersion('leaf', 'x'.repeat(4096)), partialVersion('hundred', '{{>leaf}}'.repeat(100)), partialVersion('one', '{{.}}')];
    const r = new PromptRenderer(
      new PromptsDouble(
        [
          promptVersion({ template: '{{>hundred}}'.repeat(250), slug: 'boom', version: 3 }),
          promptVersion({ template: JSON.stringify([{ role: 'user', content: '{{#items}}{{>one}}{{/items}}' }]), slug: 'each', promptId: 'pr-2' }),
        ],
        partials,
      ),
    );
    const boom = await thrown(r.render(principal, 'boom@3', { variables: {}, hyperparameters: {} }));
    expect(boom).toBeInstanceOf(PromptLimitError);
    expect([boom.status, boom.param, boom.openaiCode]).toEqual([422, 'string', 'prompt_render_failed']);
    expect(boom.message).toBe(
      'The prompt "boom" (version 3) cannot be rendered: it would render more than 1,048,578 characters (the limit: 1 MiB more than the request\'s variables)',
    );
    const each = await thrown(r.render(principal, 'each', { variables: { items: Array.from({ length: 1_001 }, () => 1) }, hyperparameters: {} }));
    expect([each.status, each.problems]).toEqual([
      422,
      [{ path: 'partials', message: 'would include partials more than 1,000 times (the limit of one render)' }],
    ]);
    const within = await r.render(principal, 'each', { variables: { items: [1, 2, 3] }, hyperparameters: {} });
    expect(within.request.messages).toEqual([{ role: 'user', content: '123' }]);
  });

  it('lets a render write its variables and 1 MiB more: a large value once, not twice', async () => {
    const r = new PromptRenderer(
      new PromptsDouble([
        promptVersion({ template: 'Summarise: {{text}}' }),
        promptVersion({ template: '{{text}} {{text}}', slug: 'twice', promptId: 'pr-2' }),
      ]),
    );
    const text = 'y'.repeat(3 << 20);
    const once = await r.render(principal, 'greeting', { variables: { text }, hyperparameters: {} });
    expect(once.request.messages).toEqual([{ role: 'user', content: `Summarise: ${text}` }]);
    const twice = await thrown(r.render(principal, 'twice', { variables: { text }, hyperparameters: {} }));
    expect([twice.status, twice.param]).toEqual([422, 'string']);
  });

  it('keeps JSON objects of a message template as data, whatever their keys', async () => {
    const template = JSON.stringify([{ role: 'user', content: '{{q}}', name: 'n', metadata: { source: 's', tokens: 't' } }]);
    const r = new PromptRenderer(new PromptsDouble([promptVersion({ template })]));
    const out = await r.render(principal, 'greeting', { variables: { q: 'hi' }, hyperparameters: {} });
    expect(out.request.messages).toEqual([{ role: 'user', content: 'hi', name: 'n', metadata: { source: 's', tokens: 't' } }]);
  });
});

describe('the create example of POST /v1/prompts', () => {
  it('renders to the system and user messages it shows (the console pre-fills new prompts with it)', async () => {
    const create = promptRoutes.find((r) => r.method === 'POST' && r.path === '/v1/prompts');
    const example = create?.example as { string: string; model: string } | undefined;
    const renderer = new PromptRenderer(new PromptsDouble([promptVersion({ template: example?.string ?? '', model: example?.model ?? '' })]));
    const out = await renderer.render(principal, 'greeting', { variables: { company: 'Acme', question: 'Where is my order?' }, hyperparameters: {} });
    expect(out.request.messages).toEqual([
      { role: 'system', content: 'You answer for Acme.' },
      { role: 'user', content: 'Where is my order?' },
    ]);
  });
});
