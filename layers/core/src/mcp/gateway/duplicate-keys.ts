/**
 * Finds a key that appears twice in one object of a JSON text. JSON.parse keeps the last one, and
 * a server may keep the first: a `tools/call` with two `name`s would be checked on one tool and run
 * as another. The text must already be valid JSON (JSON.parse accepted it); keys are compared as
 * the strings they denote, so `"na\u006de"` is `"name"`.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** Index of the quote that closes the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i;
    i += c === BACKSLASH ? 2 : 1;
  }
}

/** The first key repeated within one object, at any depth; undefined when every object's keys are distinct. */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the keys seen so far of an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      const keys = open.at(-1);
      if (keyNext && keys) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (keys.has(key)) return key;
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT) {
      open.push(new Set());
      keyNext = true;
    } else if (c === OPEN_ARRAY) {
      open.push(null);
      keyNext = false;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
      keyNext = false;
    } else if (c === COMMA) {
      // After a comma in an object comes a key; in an array, a value.
      keyNext = Boolean(open.at(-1));
    }
  }
  return undefined;
}
