/**
 * Every local check with a passing input, a failing input and parameters it refuses (naming the
 * path). Mutators also show the request or answer they hand back.
 */
import { describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../../../layers/core/src/guardrails/registry.ts';
import { problems, run } from './support.ts';

const after = (text: string, json?: unknown) => ({ event: 'afterRequestHook' as const, text: 'q', response: { text, json } });

describe('text checks', () => {
  it('regexMatch passes on a match, fails without one, inverts with not, refuses a broken rule', async () => {
    expect((await run('default.regexMatch', { rule: '\\bsecret\\b' }, { text: 'a secret here' })).verdict).toBe(true);
    expect((await run('default.regexMatch', { rule: '\\bsecret\\b' }, { text: 'nothing' })).verdict).toBe(false);
    expect((await run('default.regexMatch', { rule: 'secret', not: true }, after('the secret'))).verdict).toBe(false);
    expect(problems('default.regexMatch', { rule: '(' })).toEqual(['rule: is not a valid regular expression']);
    expect(problems('default.regexMatch', {})).toEqual(['rule: must be a non-empty string']);
  });

  it('contains honours all, any and none and names a bad operator', async () => {
    const text = 'please help me, thank you';
    expect((await run('default.contains', { words: ['please', 'thank you'], operator: 'all' }, { text })).verdict).toBe(true);
    expect((await run('default.contains', { words: ['please', 'sorry'], operator: 'all' }, { text })).verdict).toBe(false);
    expect((await run('default.contains', { words: ['sorry', 'help'] }, { text })).verdict).toBe(true);
    expect((await run('default.contains', { words: ['help'], operator: 'none' }, { text })).verdict).toBe(false);
    expect(problems('default.contains', { words: ['x'], operator: 'some' })).toEqual(['operator: must be one of any, all, none']);
    expect(problems('default.contains', { words: 'x' })).toEqual(['words: must be a non-empty array of strings']);
  });

  it('counts sentences, words and characters within bounds', async () => {
    expect((await run('default.sentenceCount', { minSentences: 2, maxSentences: 3 }, after('One. Two! Three?'))).verdict).toBe(true);
    expect((await run('default.sentenceCount', { maxSentences: 1 }, after('One. Two.'))).verdict).toBe(false);
    expect((await run('default.wordCount', { minWords: 3 }, { text: 'only two' })).verdict).toBe(false);
    expect((await run('default.wordCount', { minWords: 1, maxWords: 2, not: true }, { text: 'only two' })).verdict).toBe(false);
    expect((await run('default.characterCount', { maxCharacters: 5 }, { text: 'héllo' })).verdict).toBe(true);
    expect((await run('default.characterCount', { maxCharacters: 4 }, { text: 'héllo' })).verdict).toBe(false);
    expect(problems('default.wordCount', { minWords: 5, maxWords: 2 })).toEqual(['minWords: must not be greater than maxWords']);
    expect(problems('default.characterCount', { maxCharacters: 'ten' })).toEqual(['maxCharacters: must be a number']);
    expect(problems('default.sentenceCount', { maxSentence: 2 })[0]).toMatch(/^maxSentence: unknown parameter/);
  });

  it('checks case, suffix, emptiness and code blocks', async () => {
    expect((await run('default.alluppercase', {}, { text: 'HELLO, 123!' })).verdict).toBe(true);
    expect((await run('default.alluppercase', {}, { text: 'Hello' })).verdict).toBe(false);
    expect((await run('default.alllowercase', {}, { text: 'hello world' })).verdict).toBe(true);
    expect((await run('default.alllowercase', { not: true }, { text: 'hello world' })).verdict).toBe(false);
    expect((await run('default.endsWith', { suffix: '.' }, after('Done.  '))).verdict).toBe(true);
    expect((await run('default.endsWith', { suffix: '.' }, after('Done'))).verdict).toBe(false);
    expect((await run('default.notNull', {}, after('  '))).verdict).toBe(false);
    expect((await run('default.notNull', {}, after('x'))).verdict).toBe(true);
    expect((await run('default.containsCode', { format: 'SQL' }, after('```sql\nSELECT 1\n```'))).verdict).toBe(true);
    expect((await run('default.containsCode', { format: 'Python' }, after('```py\nprint(1)\n```'))).verdict).toBe(true);
    expect((await run('default.containsCode', { format: 'Python', not: true }, after('```py\nprint(1)\n```'))).verdict).toBe(false);
    expect((await run('default.containsCode', { format: 'SQL' }, after('no code'))).verdict).toBe(false);
    expect(problems('default.containsCode', { format: 'Cobol' })[0]).toMatch(/^format: must be one of SQL, Python/);
    expect(problems('default.endsWith', { suffix: '' })).toEqual(['suffix: must not be empty']);
    expect(problems('default.notNull', { failOnError: 'yes' })).toEqual(['failOnError: must be a boolean']);
  });
});

describe('JSON checks', () => {
  const schema = { type: 'object', properties: { result: { type: 'string' } }, required: ['result'] };

  it('jsonSchema validates JSON found in the text, in a fence, or in prose', async () => {
    expect((await run('default.jsonSchema', { schema }, after('{"result":"ok"}'))).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema }, after('Here:\n```json\n{"result":"ok"}\n```'))).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema }, after('It is {"result": "ok"} indeed'))).verdict).toBe(true);
    const bad = await run('default.jsonSchema', { schema }, after('{"result": 3}'));
    expect(bad.verdict).toBe(false);
    expect((bad.data as { errors: unknown[] }).errors.length).toBeGreaterThan(0);
    expect((await run('default.jsonSchema', { schema }, after('no json'))).verdict).toBe(false);
    expect((await run('default.jsonSchema', { schema, not: true }, after('no json'))).verdict).toBe(true);
    expect(problems('default.jsonSchema', {})).toEqual(['schema: is required']);
    expect(problems('default.jsonSchema', { schema: [] })).toEqual(['schema: must be an object (a JSON Schema)']);
    expect(problems('default.jsonSchema', { schema: { $ref: '#/definitions/missing' } })[0]).toMatch(/^schema: is not a usable JSON Schema/);
  });

  it('jsonKeys looks for keys with all, any or none', async () => {
    const text = '{"result": 1, "id": 2}';
    expect((await run('default.jsonKeys', { keys: ['result', 'id'], operator: 'all' }, after(text))).verdict).toBe(true);
    expect((await run('default.jsonKeys', { keys: ['result', 'timestamp'], operator: 'all' }, after(text))).verdict).toBe(false);
    expect((await run('default.jsonKeys', { keys: ['timestamp'], operator: 'none' }, after(text))).verdict).toBe(true);
    expect((await run('default.jsonKeys', { keys: ['x'], operator: 'none' }, after('not json'))).verdict).toBe(false);
    expect(problems('default.jsonKeys', { keys: [], operator: 'all' })).toEqual(['keys: must not be empty']);
  });
});

describe('request checks', () => {
  const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

  it('modelWhitelist allows listed models, or blocks them with not', async () => {
    expect((await run('default.modelWhitelist', { models: ['gpt-4o'] }, { json: chat('gpt-4o') })).verdict).toBe(true);
    expect((await run('default.modelWhitelist', { models: ['gpt-4o'] }, { json: chat('o1') })).verdict).toBe(false);
    expect((await run('default.modelWhitelist', { models: ['o1'], not: true }, { json: chat('o1') })).verdict).toBe(false);
    expect(problems('default.modelWhitelist', {})).toEqual(['models: is required']);
  });

  it('modelRules chooses the allowed models by metadata, else the defaults', async () => {
    const rules = { defaults: ['gpt-4o-mini'], metadata: { team: { research: ['o1', 'gpt-4o'] } } };
    expect((await run('default.modelRules', { rules }, { json: chat('o1'), metadata: { team: 'research' } })).verdict).toBe(true);
    expect((await run('default.modelRules', { rules }, { json: chat('o1'), metadata: { team: 'sales' } })).verdict).toBe(false);
    expect((await run('default.modelRules', { rules }, { json: chat('gpt-4o-mini') })).verdict).toBe(true);
    expect(problems('default.modelRules', { rules: { metadata: { team: { research: 'o1' } } } })).toEqual([
      'rules.metadata.team.research: must be an array of model names',
    ]);
  });

  it('requiredMetadataKeys and requiredMetadataKeyPairs read x-gw-metadata with all, any, none', async () => {
    const metadata = { env: 'prod', team: 'a' };
    expect((await run('default.requiredMetadataKeys', { metadataKeys: ['env', 'team'] }, { metadata })).verdict).toBe(true);
    expect((await run('default.requiredMetadataKeys', { metadataKeys: ['env', 'user'], operator: 'all' }, { metadata })).verdict).toBe(false);
    expect((await run('default.requiredMetadataKeys', { metadataKeys: ['env', 'user'], operator: 'any' }, { metadata })).verdict).toBe(true);
    const pairs = { env: 'prod', team: 'b' };
    expect((await run('default.requiredMetadataKeyPairs', { metadataPairs: pairs, operator: 'all' }, { metadata })).verdict).toBe(false);
    expect((await run('default.requiredMetadataKeyPairs', { metadataPairs: pairs, operator: 'any' }, { metadata })).verdict).toBe(true);
    expect((await run('default.requiredMetadataKeyPairs', { metadataPairs: { env: 'dev' }, operator: 'none' }, { metadata })).verdict).toBe(true);
    expect((await run('default.requiredMetadataKeyPairs', { metadataPairs: { env: 'prod' } }, { metadata: {} })).verdict).toBe(false);
    expect(problems('default.requiredMetadataKeyPairs', { metadataPairs: { env: 'prod' }, operator: 'some' })).toEqual([
      'operator: must be one of all, any, none',
    ]);
    expect(problems('default.requiredMetadataKeyPairs', { metadataPairs: { env: 1 } })).toEqual(['metadataPairs.env: must be a string']);
  });

  it('allowedRequestTypes: blocked types win over allowed ones', async () => {
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['chatComplete', 'embed'] }, {})).verdict).toBe(true);
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['embed'] }, {})).verdict).toBe(false);
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['chatComplete'], blockedTypes: ['chatComplete'] }, {})).verdict).toBe(false);
    expect(problems('default.allowedRequestTypes', { allowedTypes: ['chat'] })[0]).toMatch(/^allowedTypes\[0\]: must be one of chatComplete/);
    expect(problems('default.allowedRequestTypes', {})).toEqual(['allowedTypes: allowedTypes or blockedTypes is required']);
  });

  it('requestParametersCheck: tools by type and function name, params by key and value', async () => {
    const json = {
      model: 'gpt-4o',
      messages: [],
      temperature: 1.5,
      tools: [{ type: 'function', function: { name: 'delete_user' } }, { type: 'web_search' }],
    };
    const check = (p: Record<string, unknown>) => run('default.requestParametersCheck', p, { json });
    expect((await check({ tools: { allowedTypes: ['function', 'web_search'] } })).verdict).toBe(true);
    expect((await check({ tools: { blockedTypes: ['web_search'] } })).verdict).toBe(false);
    expect((await check({ tools: { blockedFunctionNames: ['delete_user'] } })).verdict).toBe(false);
    expect((await check({ tools: { allowedFunctionNames: ['get_user'] } })).verdict).toBe(false);
    expect((await check({ tools: { allowedFunctionNames: [] } })).verdict).toBe(true);
    expect((await check({ params: { blockedKeys: ['temperature'] } })).verdict).toBe(false);
    expect((await check({ params: { allowedKeys: ['temperature', 'tools'] } })).verdict).toBe(true);
    expect((await check({ params: { allowedKeys: ['tools'] } })).verdict).toBe(false);
    expect((await check({ params: { values: { temperature: { allowedValues: [0, 0.5] } } } })).verdict).toBe(false);
    expect((await check({ params: { values: { temperature: { blockedValues: [2] } } } })).verdict).toBe(true);
    const failed = await check({ params: { values: { temperature: { blockedValues: [1.5] } } } });
    expect(failed.data).toEqual({ violations: ['temperature: value 1.5 is blocked'] });
    expect(problems('default.requestParametersCheck', { params: { values: { temperature: { allowed: [1] } } } })).toEqual([
      'params.values.temperature.allowed: unknown key (known: allowedValues, blockedValues)',
    ]);
    expect(problems('default.requestParametersCheck', { tools: { blockedTypes: 'x' } })).toEqual(['tools.blockedTypes: must be an array of strings']);
  });
});

describe('mutators', () => {
  it('regexReplace redacts the request and the answer and can fail on detection', async () => {
    const json = {
      model: 'm',
      messages: [
        { role: 'system', content: 'sys 4111' },
        { role: 'user', content: 'card 4111-1111' },
      ],
    };
    const before = await run('default.regexReplace', { rule: '\\d{4}-\\d{4}', redactText: '[CARD]' }, { json, text: 'card 4111-1111' });
    expect(before).toMatchObject({ verdict: true, transformed: true });
    expect(before.transformedData?.request?.json.messages).toEqual([
      { role: 'system', content: 'sys 4111' },
      { role: 'user', content: 'card [CARD]' },
    ]);
    const answer = { choices: [{ index: 0, message: { role: 'assistant', content: 'mail a@b.co now' } }] };
    const out = await run('default.regexReplace', { rule: '\\S+@\\S+', failOnDetection: true }, after('mail a@b.co now', answer));
    expect(out.verdict).toBe(false);
    expect(out.transformedData?.response?.json).toEqual({ choices: [{ index: 0, message: { role: 'assistant', content: 'mail [REDACTED] now' } }] });
    expect((await run('default.regexReplace', { rule: 'zzz' }, { text: 'clean' })).transformed).toBeUndefined();
    expect(problems('default.regexReplace', { rule: '[' })).toEqual(['rule: is not a valid regular expression']);
  });

  it('addPrefix prefixes the last message of the role, or adds one', async () => {
    const json = {
      model: 'm',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'user', content: [{ type: 'text', text: 'second' }] },
      ],
    };
    const out = await run('default.addPrefix', { prefix: 'Be brief. ' }, { json });
    expect(out.transformedData?.request?.json.messages).toEqual([
      { role: 'user', content: 'first' },
      { role: 'user', content: [{ type: 'text', text: 'Be brief. second' }] },
    ]);
    const sys = await run('default.addPrefix', { prefix: 'You are terse.', applyToRole: 'system' }, { json });
    expect((sys.transformedData?.request?.json.messages as unknown[])[0]).toEqual({ role: 'system', content: 'You are terse.' });
    const none = await run('default.addPrefix', { prefix: 'x', onlyIfEmpty: true }, { json });
    expect(none.transformed).toBeUndefined();
    const completion = await run('default.addPrefix', { prefix: 'Q: ' }, { requestType: 'complete', json: { model: 'm', prompt: 'why' } });
    expect(completion.transformedData?.request?.json).toEqual({ model: 'm', prompt: 'Q: why' });
    expect(problems('default.addPrefix', { prefix: 'x', applyToRole: 'tool' })).toEqual(['applyToRole: must be one of user, system, developer, assistant']);
  });
});

describe('registry', () => {
  it('holds every built-in, contract check and partner check', () => {
    for (const id of [
      'default.regexMatch',
      'default.sentenceCount',
      'default.wordCount',
      'default.characterCount',
      'default.jsonSchema',
      'default.jsonKeys',
      'default.contains',
      'default.validUrls',
      'default.containsCode',
      'default.webhook',
      'default.alluppercase',
      'default.alllowercase',
      'default.endsWith',
      'default.modelWhitelist',
      'default.modelRules',
      'default.requiredMetadataKeys',
      'default.allowedRequestTypes',
      'default.notNull',
      'default.regexReplace',
      'default.addPrefix',
      'default.requiredMetadataKeyPairs',
      'default.requestParametersCheck',
      'default.inlineImageUrls',
      'lakera.guard',
      'azure.contentSafety',
      'azure.shieldPrompt',
      'bedrock.guard',
    ]) {
      expect(CHECK_IDS).toContain(id);
    }
  });
});
