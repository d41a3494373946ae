/** FsBlobStore on a real temp directory: round trips, misses, and keys that try to leave the root. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../../../layers/core/src/ports/local/blob-fs.ts';

let parent: string;
let root: string;
let store: FsBlobStore;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'gantry-blob-'));
  root = join(parent, 'blobs');
  store = new FsBlobStore(root);
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

const bytes = (...values: number[]) => new Uint8Array(values);

describe('FsBlobStore', () => {
  it('round-trips binary bodies under nested keys', async () => {
    const body = new Uint8Array(256).map((_, i) => i);
    await store.put('cache/ab12/body.bin', body, 'application/octet-stream');
    expect(await store.get('cache/ab12/body.bin')).toEqual(body);
    expect(await readFile(join(root, 'cache', 'ab12', 'body.bin'))).toEqual(Buffer.from(body));
  });

  it('replaces a body and leaves no temp files behind', async () => {
    await store.put('k', bytes(1, 2, 3));
    await store.put('k', bytes(9));
    expect(await store.get('k')).toEqual(bytes(9));
    expect(await readdir(join(root, '.tmp'))).toEqual([]);
  });

  it('stores an empty body', async () => {
    await store.put('empty', bytes());
    expect(await store.get('empty')).toEqual(bytes());
  });

  it('answers undefined for a missing key, also below a stored one', async () => {
    expect(await store.get('nothing/here')).toBeUndefined();
    await store.put('file', bytes(1));
    expect(await store.get('file/child')).toBeUndefined();
  });

  it('deletes, and deleting a missing key is not an error', async () => {
    await store.put('gone', bytes(1));
    await store.delete('gone');
    expect(await store.get('gone')).toBeUndefined();
    await expect(store.delete('gone')).resolves.toBeUndefined();
  });

  it.each(['../escape', 'a/../../escape', '/etc/passwd', '..', '.', 'a/./b', 'a//b', 'a/', '', '.tmp/x', 'a\\..\\b', 'C:/x', 'a\u0000b'])(
    'refuses the key %j on every operation',
    async (key) => {
      await expect(store.put(key, bytes(1))).rejects.toThrow(TypeError);
      await expect(store.get(key)).rejects.toThrow(TypeError);
      await expect(store.delete(key)).rejects.toThrow(TypeError);
    },
  );

  it('never writes outside its root', async () => {
    await expect(store.put('../outside', bytes(1))).rejects.toThrow(TypeError);
    await expect(stat(join(parent, 'outside'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('FsBlobStore streams', () => {
  async function* pieces(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
    yield* parts;
  }

  it('stores a streamed body and reads it back as a stream', async () => {
    const body = randomBytes(3 << 20);
    await store.putStream('files/w/f1', pieces(body.subarray(0, 1000), body.subarray(1000)));
    expect((await readFile(join(root, 'files', 'w', 'f1'))).equals(body)).toBe(true);
    const out: Buffer[] = [];
    for await (const chunk of (await store.getStream('files/w/f1'))!) out.push(chunk as Buffer);
    expect(Buffer.concat(out).equals(body)).toBe(true);
    expect(await store.getStream('files/w/none')).toBeUndefined();
  });

  it('keeps nothing, not even a temp file, when the source fails', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield bytes(1, 2, 3);
      throw new Error('client went away');
    }
    await expect(store.putStream('files/w/broken', failing())).rejects.toThrow('client went away');
    expect(await store.get('files/w/broken')).toBeUndefined();
    expect(await readdir(join(root, '.tmp'))).toEqual([]);
  });
});
