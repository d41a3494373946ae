/**
 * The prompt template engine against the Mustache specification's vectors: the specification's
 * text (misses render empty, its lenient behaviour) and every missing variable or partial reported
 * by name (what strict mode refuses; render.test.ts checks both modes), then the escaping modes.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { compileTemplate, renderTemplate, type RenderOptions } from '../../../../layers/core/src/prompts/template.ts';
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
  const run = (template: string, view: Record<string, unknown>, escape: RenderOptions['escape']) =>
    renderTemplate(compileTemplate(template), view, { escape });

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
