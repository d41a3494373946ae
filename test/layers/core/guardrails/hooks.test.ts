import { describe, expect, it } from 'vitest';
import { ValidationError, type FieldProblem } from '../../../../layers/core/src/http/errors.ts';
import { validateConfigBody } from '../../../../layers/core/src/admin/configs/service.ts';
import { leaves } from '../../../../layers/core/src/gateway/routing/inherit.ts';
import { configProblems } from '../../../../layers/core/src/gateway/routing/validate.ts';
import { DEFAULT_WINDOW, toHookEntries } from '../../../../layers/core/src/guardrails/hooks.ts';
import { findCheck } from '../../../../layers/core/src/guardrails/registry.ts';

const leaf = { provider: 'openai', api_key: 'sk' };
const contains = { id: 'default.contains', parameters: { operator: 'none', words: ['x'] } };
const hook = (extra: Record<string, unknown> = {}) => ({ type: 'guardrail', id: 'h', checks: [contains], ...extra });
const pairs = (problems: FieldProblem[]) => problems.map((p) => [p.path, p.message]);

describe('hooks in configs', () => {
  it.each<[string, Record<string, unknown>, string[][]]>([
    [
      'an unknown check id',
      { before_request_hooks: [hook({ checks: [{ id: 'default.nope', parameters: {} }] })] },
      [['before_request_hooks[0].checks[0].id', 'unknown check "default.nope"']],
    ],
    [
      "a check's bad parameters, with their path",
      { after_request_hooks: [hook({ checks: [{ id: 'default.contains', parameters: { operator: 'some', words: [] } }] })] },
      [
        ['after_request_hooks[0].checks[0].parameters.words', 'must be a non-empty array of strings'],
        ['after_request_hooks[0].checks[0].parameters.operator', 'must be one of any, all, none'],
      ],
    ],
    [
      'a hook without type and checks',
      { before_request_hooks: [{ id: 'h', deny: 'yes' }] },
      [
        ['before_request_hooks[0].type', 'must be one of guardrail, mutator'],
        ['before_request_hooks[0].checks', 'is required'],
        ['before_request_hooks[0].deny', 'must be a boolean'],
      ],
    ],
    ['an unknown hook key', { before_request_hooks: [hook({ denny: true })] }, [['before_request_hooks[0].denny', 'unknown key']]],
    [
      'failOnError not a boolean',
      { before_request_hooks: [hook({ checks: [{ ...contains, parameters: { ...contains.parameters, failOnError: 'yes' } }] })] },
      [['before_request_hooks[0].checks[0].parameters.failOnError', 'must be a boolean']],
    ],
    [
      'a bad window',
      { after_request_hooks: [hook({ window: { size: 0, context: -1, overlap: 3 } })] },
      [
        ['after_request_hooks[0].window.overlap', 'unknown key'],
        ['after_request_hooks[0].window.size', 'must be an integer from 1 to 100000'],
        ['after_request_hooks[0].window.context', 'must be an integer from 0 to 100000'],
      ],
    ],
    [
      'a shorthand with a bad check',
      { input_guardrails: [{ 'default.regexMatch': { rule: '(' }, deny: true }] },
      [['input_guardrails[0].default.regexMatch.rule', 'is not a valid regular expression']],
    ],
    ['a shorthand naming no check', { output_guardrails: [{ deny: true }] }, [['output_guardrails[0]', 'names no check (keys such as "default.contains")']]],
    ['an empty saved name', { input_guardrails: [' '] }, [['input_guardrails[0]', 'must name a saved guardrail (id or slug)']]],
  ])('reports %s', (_title, hooks, expected) => {
    expect(pairs(configProblems({ ...leaf, ...hooks }, { findCheck }))).toEqual(expected);
  });

  it('leaves check ids and parameters alone without the checks (the gateway checks them once loaded)', () => {
    expect(configProblems({ ...leaf, input_guardrails: [{ 'default.nope': {} }] })).toEqual([]);
  });

  it('refuses a saved config whose hook names an unknown check, naming it in the admin body', () => {
    let problems: FieldProblem[] = [];
    try {
      validateConfigBody({ ...leaf, input_guardrails: [{ 'default.nope': {} }] });
    } catch (err) {
      if (err instanceof ValidationError) problems = err.problems;
    }
    expect(pairs(problems)).toEqual([['config.input_guardrails[0].default.nope', 'unknown check "default.nope"']]);
  });

  it('reports problems of hooks at any depth with the full path', () => {
    const config = { strategy: { mode: 'fallback' }, targets: [leaf, { ...leaf, output_guardrails: [{ 'default.contains': { words: [7] } }] }] };
    expect(pairs(configProblems(config, { findCheck }))).toEqual([['targets[1].output_guardrails[0].default.contains.words[0]', 'must be a non-empty string']]);
  });

  it('accepts hooks, shorthands and saved names, and hands them down to targets', () => {
    const config = {
      strategy: { mode: 'fallback', on_status_codes: [246, 446] },
      input_guardrails: ['pii-guard', { 'default.contains': { words: ['a'] }, deny: true }],
      targets: [{ ...leaf, retry: { attempts: 1, on_status_codes: [446] }, after_request_hooks: [hook({ sequential: true, window: { size: 50 } })] }, leaf],
    };
    expect(configProblems(config, { findCheck })).toEqual([]);
    const [first, second] = leaves(config as never);
    expect(first?.hooks.input_guardrails).toEqual(config.input_guardrails);
    expect(first?.hooks.after_request_hooks).toHaveLength(1);
    expect(second?.hooks.after_request_hooks).toBeUndefined();
  });

  it('turns lists into hooks: shorthand checks, saved references, defaults', () => {
    const entries = toHookEntries(
      'output_guardrails',
      ['pii-guard', { id: 'saved-by-id' }, { 'default.contains': { words: ['a'] }, deny: true, window: { context: 10 } }],
      '',
    );
    expect(entries[0]).toEqual({ saved: 'pii-guard', path: 'output_guardrails[0]', event: 'afterRequestHook' });
    expect(entries[1]).toEqual({ saved: 'saved-by-id', path: 'output_guardrails[1]', event: 'afterRequestHook' });
    expect(entries[2]).toMatchObject({
      id: 'output_guardrails[2]',
      type: 'guardrail',
      event: 'afterRequestHook',
      checks: [{ id: 'default.contains', parameters: { words: ['a'] } }],
      deny: true,
      async: false,
      sequential: false,
      window: { size: DEFAULT_WINDOW.size, context: 10 },
    });
  });
});
