/**
 * Log ids tell the request's start (a version 7 UUID), so that with the workspace they are the log
 * item's key; ids of earlier versions (v4 UUIDs) and anything else do not decode.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newLogId, startOfLogId } from '../../../../layers/core/src/observability/log-id.ts';

describe('log ids', () => {
  it('are UUIDs of version 7 that give back the start they were made for, to the millisecond', () => {
    const started = Date.UTC(2026, 10, 28, 15, 4, 5, 678);
    const ids = Array.from({ length: 1_000 }, () => newLogId(started));
    for (const id of ids.slice(0, 20)) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(startOfLogId(id)).toBe(started);
    }
    // Many requests in the same millisecond still get ids of their own.
    expect(new Set(ids).size).toBe(ids.length);
    expect(startOfLogId(newLogId(0))).toBe(0);
  });

  it('do not decode from the ids of earlier versions or from anything else', () => {
    expect(startOfLogId(randomUUID())).toBeUndefined();
    expect(startOfLogId('evt-1-2')).toBeUndefined();
    expect(startOfLogId(newLogId(Date.now()).toUpperCase())).toBeUndefined();
    expect(startOfLogId('')).toBeUndefined();
  });
});
