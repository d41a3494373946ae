/**
 * The prompt template engine against the Mustache specification's vectors: the specification's
 * text (misses render empty, its lenient behaviour) and every missing variable or partial reported
 * by name (what strict mode refuses; render.test.ts checks both modes), then the escaping modes,
 * then the limits every render is measured against before it is written.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import {
  compileTemplate,
  DEFAULT_RENDER_LIMITS,
  renderTemplate,
  renderTemplates,
  TemplateLimitError,
  type RenderLimits,
  type RenderOptions,
} from '../../../../layers/core/src/prompts/template.ts';
import { COMMENTS, DELIMITERS, INTERPOLATION, INVERTED, PARTIALS, SECTIONS, type SpecVector } from './mustache-spec.ts';

const MODULES: Record<string, readonly SpecVector[]> = {
  interpolation: INTERPOLATION,
  sections: SECTIONS,
  inverted: INVERTED,
  partials: PARTIALS,
  comments: COMMENTS,
  delimiters: DELIMITERS,
};

/** The vectors (module/name) whose data lacks a name the template interpolates, and what strict mode reports. */
const STRICT_MISSES: Record<string, { variables?: string[]; partials?: string[] }> = {
  'interpolation/Basic Context Miss Interpolation': { variables: ['cannot'] },
  'interpolation/Triple Mustache Context Miss Interpolation': { variables: ['cannot'] },
  'interpolation/Ampersand Context Miss Interpolation': { variables: ['cannot'] },
  'interpolation/Dotted Names - Broken Chains': { variables: ['a.b.c'] },
  'interpolation/Dotted Names - Broken Chain Resolution': { variables: ['a.b.c.name'] },
  'interpolation/Dotted Names - Context Precedence': { variables: ['b.c'] },
  'interpolation/Dotted Names are never single keys': { variables: ['a.b'] },
  'partials/Failed Lookup': { partials: ['text'] },
};

function render(v: SpecVector) {
  const opts: RenderOptions = { escape: 'html', partials: new Map(Object.entries(v.partials ?? {})) };
  return renderTemplate(compileTemplate(v.template), v.data as Record<string, unknown>, opts);
}

describe.each(Object.entries(MODULES))('Mustache specification: %s', (module, vectors) => {
  it.each(vectors.map((v) => [v.name, v] as const))('%s', (name, v) => {
    const out = render(v);
    expect(out.text).toBe(v.expected);
    const misses = STRICT_MISSES[`${module}/${name}`];
    expect(out.missingVariables).toEqual(misses?.variables ?? []);
    expect(out.missingPartials).toEqual(misses?.partials ?? []);
  });
});

describe('prompt escaping and misses', () => {
  const run = (template: string, view: Record<string, unknown>, escape: RenderOptions['escape']) => renderTemplate(compileTemplate(template), view, { escape });

  it('leaves prompt text as written in `none` mode (no &amp;, no &#x60;)', () => {
    expect(run('Q: {{q}}', { q: 'a & b `c` <d> "e"' }, 'none').text).toBe('Q: a & b `c` <d> "e"');
  });

  it('escapes a value into a JSON string in `json` mode, and {{{raw}}} inserts it as it is', () => {
    const out = run('{"text": "{{q}}", "tags": {{{tags}}}}', { q: 'say "hi"\nnow', tags: ['a', 'b'] }, 'json');
    expect(JSON.parse(out.text)).toEqual({ text: 'say "hi"\nnow', tags: ['a', 'b'] });
  });

  it('renders objects as JSON, never [object Object]', () => {
    expect(run('{{user}}', { user: { name: 'Ada' } }, 'none').text).toBe('{"name":"Ada"}');
  });

  it('reports every missing variable once, in order, but not section names (a missing section is false)', () => {
    const out = run('{{a}} {{#opt}}x{{/opt}}{{^opt}}default{{/opt}} {{b.c}} {{a}} {{{d}}}', {}, 'none');
    expect(out.missingVariables).toEqual(['a', 'b.c', 'd']);
    expect(out.text).toBe(' default   ');
  });

  it('renders a present null as empty without calling it missing', () => {
    expect(run('[{{a}}]', { a: null }, 'none')).toEqual({ text: '[]', missingVariables: [], missingPartials: [] });
  });

  it('names the partials a template uses, inside sections and with versions', () => {
    expect(compileTemplate('{{>head}}{{#s}}{{>body@2}}{{/s}}{{^t}}{{>head}}{{/t}}').partials).toEqual(['head', 'body@2']);
  });

  it('refuses a template with an unclosed section as a 400 naming the field', () => {
    const err = (() => {
      try {
        compileTemplate('{{#open}} never closed', 'string');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).problems[0]?.path).toBe('string');
    expect((err as ValidationError).message).toMatch(/Unclosed section "open"/);
  });
});

describe('render limits', () => {
  const small: RenderLimits = { maxChars: 100, maxPartials: 10, maxSteps: 200 };
  const limited = (template: string, view: Record<string, unknown>, partials: Record<string, string> = {}, limits = small) => {
    try {
      return renderTemplate(compileTemplate(template), view, { escape: 'none', partials: new Map(Object.entries(partials)), limits });
    } catch (err) {
      if (err instanceof TemplateLimitError) return { refused: err.kind, limit: err.limit };
      throw err;
    }
  };

  it('refuses partials that include each other many times from what one inclusion costs (100 MB of text, defaults)', () => {
    const partials = { leaf: 'x'.repeat(4096), hundred: '{{>leaf}}'.repeat(100) };
    expect(limited('{{>hundred}}'.repeat(250), {}, partials, DEFAULT_RENDER_LIMITS)).toEqual({ refused: 'maxChars', limit: 1 << 20 });
    const tiny = { one: 'x', hundred: '{{>one}}'.repeat(100) };
    expect(limited('{{>hundred}}'.repeat(250), {}, tiny, DEFAULT_RENDER_LIMITS)).toEqual({ refused: 'maxPartials', limit: 1_000 });
  });

  it('counts a partial in a section once per item of the list', () => {
    expect(limited('{{#items}}{{>p}}{{/items}}', { items: Array.from({ length: 10 }, (_, i) => i) }, { p: '{{.}}' })).toMatchObject({ text: '0123456789' });
    expect(limited('{{#items}}{{>p}}{{/items}}', { items: Array.from({ length: 11 }, (_, i) => i) }, { p: '{{.}}' })).toEqual({
      refused: 'maxPartials',
      limit: 10,
    });
  });

  it('writes exactly up to the character limit, and refuses one more', () => {
    expect(limited('{{a}}{{a}}', { a: 'x'.repeat(50) })).toMatchObject({ text: 'x'.repeat(100) });
    expect(limited('{{a}}{{a}}!', { a: 'x'.repeat(50) })).toEqual({ refused: 'maxChars', limit: 100 });
  });

  it('counts the steps of sections that write nothing (nested sections over one list)', () => {
    const items = Array.from({ length: 10 }, () => 1);
    expect(limited('{{#a}}{{#a}}{{/a}}{{/a}}', { a: items })).toMatchObject({ text: '' });
    expect(limited('{{#a}}{{#a}}{{#a}}{{/a}}{{/a}}{{/a}}', { a: items })).toEqual({ refused: 'maxSteps', limit: 200 });
  });

  it('refuses a partial that includes itself where nothing can end it', () => {
    expect(limited('{{>a}}', {}, { a: 'x{{>b}}', b: 'y{{>a}}' })).toEqual({ refused: 'cycle', limit: 0 });
    // A recursion the data ends is a tree: rendered.
    const tree = { name: 'root', children: [{ name: 'a', children: [{ name: 'b', children: [] }] }] };
    expect(limited('{{>node}}', tree, { node: '{{name}}({{#children}}{{>node}}{{/children}})' })).toMatchObject({ text: 'root(a(b()))' });
  });

  it('measures the strings of a message list as one render', async () => {
    const templates = [compileTemplate('{{a}}'), compileTemplate('{{a}}')];
    const opts = { escape: 'none' as const, limits: small };
    expect((await renderTemplates(templates, { a: 'x'.repeat(50) }, opts)).texts).toEqual(['x'.repeat(50), 'x'.repeat(50)]);
    await expect(renderTemplates(templates, { a: 'x'.repeat(51) }, opts)).rejects.toMatchObject({ kind: 'maxChars' });
  });

  it('hands the event loop back during a long render', async () => {
    const order: string[] = [];
    const rows = Array.from({ length: 40_000 }, (_, i) => ({ n: i }));
    setImmediate(() => order.push('other work'));
    const out = await renderTemplates([compileTemplate('{{#rows}}{{n}},{{/rows}}')], { rows }, { escape: 'none' });
    order.push('rendered');
    expect(out.texts[0]?.length).toBeGreaterThan(200_000);
    expect(order).toEqual(['other work', 'rendered']);
  });
});
