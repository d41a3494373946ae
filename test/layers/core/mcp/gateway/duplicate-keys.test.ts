import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { duplicateKey } from '../../../../../layers/core/src/mcp/gateway/duplicate-keys.ts';
import { parseMessages } from '../../../../../layers/core/src/mcp/gateway/jsonrpc.ts';

describe('duplicateKey', () => {
  it('finds a key repeated in one object', () => {
    expect(duplicateKey('{"name":"a","name":"b"}')).toBe('name');
    expect(duplicateKey('{"params":{"name":"echo","arguments":{},"name":"delete_everything"}}')).toBe('name');
  });

  it('finds it at any depth, in arrays and batches', () => {
    expect(duplicateKey('[{"a":1},{"b":[{"c":{"d":1,"d":2}}]}]')).toBe('d');
    expect(duplicateKey('{"a":[1,{"x":1,"x":1}]}')).toBe('x');
  });

  it('compares keys as the strings they denote', () => {
    expect(duplicateKey('{"name":"a","na\\u006de":"b"}')).toBe('name');
    expect(duplicateKey('{"n\\"q":1,"n\\u0022q":2}')).toBe('n"q');
    expect(duplicateKey('{"a\\\\":1,"a\\\\":2}')).toBe('a\\');
  });

  it('lets the same key appear in different objects, and values equal to keys', () => {
    expect(duplicateKey('{"a":{"a":{"a":1}},"b":{"a":2}}')).toBeUndefined();
    expect(duplicateKey('[{"name":1},{"name":2}]')).toBeUndefined();
    expect(duplicateKey('{"name":"name","value":["name","name"]}')).toBeUndefined();
    expect(duplicateKey('{"a\\\\":1,"a":2}')).toBeUndefined();
  });

  it('is not fooled by braces, brackets, commas, colons and quotes inside strings', () => {
    expect(duplicateKey('{"text":"}{\\"name\\":1,\\"name\\":2}","name":"x"}')).toBeUndefined();
    expect(duplicateKey('{"t":"[,{\\"a\\":\\"","a":1,"b":"],","a":2}')).toBe('a');
    expect(duplicateKey('{"k\\\\":"v","x":{"k\\\\":1}}')).toBeUndefined();
  });

  it('handles whitespace, scalars and empty containers', () => {
    expect(duplicateKey(' { "a" : 1 ,\n "a" : 2 } ')).toBe('a');
    expect(duplicateKey('{}')).toBeUndefined();
    expect(duplicateKey('[]')).toBeUndefined();
    expect(duplicateKey('"a"')).toBeUndefined();
    expect(duplicateKey('{"a":{},"b":[],"c":{}}')).toBeUndefined();
  });

  it('finds a repeat exactly when one object of a generated document has one (property)', () => {
    // Keys written in different forms: "na\u006de" and "name" are the same key.
    const key = fc.constantFrom(['name', '"name"'], ['name', '"na\\u006de"'], ['a', '"a"'], ['n"a', '"n\\"a"'], ['x\\', '"x\\\\"'], ['{', '"{"'], [',', '","']);
    type Doc = { text: string; repeats: boolean };
    const doc: fc.Memo<Doc> = fc.memo((n) =>
      n <= 1
        ? fc.constantFrom('1', 'null', '"s"', '"}"', '"{\\"a\\":1,\\"a\\":2}"').map((text) => ({ text, repeats: false }))
        : fc.oneof(
            fc.array(doc(n - 1), { maxLength: 3 }).map((xs) => ({ text: `[${xs.map((x) => x.text).join(',')}]`, repeats: xs.some((x) => x.repeats) })),
            fc.array(fc.tuple(key, doc(n - 1)), { maxLength: 4 }).map((kvs) => ({
              text: `{${kvs.map(([[, written], v]) => `${written}:${v.text}`).join(',')}}`,
              repeats: new Set(kvs.map(([[k]]) => k)).size < kvs.length || kvs.some(([, v]) => v.repeats),
            })),
          ),
    );
    fc.assert(
      fc.property(doc(4), ({ text, repeats }) => {
        JSON.parse(text);
        expect(duplicateKey(text) !== undefined).toBe(repeats);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseMessages', () => {
  it('refuses a message with a duplicate key as an invalid request', () => {
    expect(parseMessages('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything","name":"echo"}}')).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid request: the key "name" appears more than once in one object' },
    });
  });

  it('reads a message whose keys are distinct', () => {
    expect(parseMessages('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}')).toEqual({
      messages: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } }],
      batch: false,
    });
  });
});
