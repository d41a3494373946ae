/**
 * The filters DynamoDB applies before a logs page reads them (filters.ts `prefilterOf`): each
 * value as the event's JSON text spells it, any value of a field, every field; none when a filter
 * asks for a missing value, so the superset never drops a log the page would show.
 */
import { describe, expect, it } from 'vitest';
import { matches, prefilterOf, type LogFilters } from '../../../../layers/core/src/observability/filters.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { syntheticEvents } from '../../../support/observability.ts';

const range: LogFilters = { from: 0, to: Number.MAX_SAFE_INTEGER };

/** What DynamoDB keeps of an item whose event text is `text`, under the prefilter (contains, AND, OR). */
function kept(f: LogFilters, text: string): boolean {
  const p = prefilterOf(f);
  if (!p) return true;
  const js = p.expression
    .replace('attribute_not_exists(#e)', 'false')
    .replace(/contains\(#e, (:pf\d+)\)/g, (_, name: string) => String(text.includes(p.values[name]!)))
    .replaceAll(' OR ', ' || ')
    .replaceAll(' AND ', ' && ');
  return Function(`return ${js}`)() as boolean;
}

describe('the prefilter of a logs page', () => {
  it('spells each value as the event text does, any value of a field and every field', () => {
    const p = prefilterOf({ ...range, traceIds: ['t "7"'], statusCodes: [500, 502] });
    expect(p).toEqual({
      expression: 'attribute_not_exists(#e) OR ((contains(#e, :pf0) OR contains(#e, :pf1)) AND contains(#e, :pf2))',
      names: { '#e': 'e' },
      values: { ':pf0': '"status_code":500', ':pf1': '"status_code":502', ':pf2': `"trace_id":${JSON.stringify('t "7"')}` },
    });
    expect(p!.values[':pf2']).toBe('"trace_id":"t \\"7\\""');
    expect(prefilterOf({ ...range, models: ['gpt-4o', 'gpt-4o-mini'] })?.expression).toBe(
      'attribute_not_exists(#e) OR (contains(#e, :pf0) OR contains(#e, :pf1))',
    );
  });

  it('puts nothing in front of filters it cannot spell: none, ranges, metadata, or a missing value', () => {
    expect(prefilterOf(range)).toBeUndefined();
    expect(prefilterOf({ ...range, costCents: { min: 1 }, metadata: { team: 'ads' } })).toBeUndefined();
    expect(prefilterOf({ ...range, configs: ['pc-1', ''] })).toBeUndefined();
  });

  it('keeps every event the page matches (a superset), for every field it spells', () => {
    const events: LogEvent[] = syntheticEvents(400, { start: 0, spanMs: 3_600_000, workspaceId: 'ws', seed: 5 });
    // An event with every field set, so that each case shows some.
    const e0 = events.find((e) => e.model && e.provider && e.api_key_id && e.config_id && e.prompt_slug && e.ai_service)!;
    const cases: LogFilters[] = [
      { ...range, statusCodes: [e0.status_code, 404] },
      { ...range, models: [e0.model ?? 'x'], providers: [e0.provider ?? 'y'] },
      { ...range, apiKeyIds: [e0.api_key_id ?? 'k'], traceIds: [e0.trace_id] },
      { ...range, configs: [e0.config_id ?? 'c'], promptSlugs: [e0.prompt_slug ?? 'p'], aiServices: [e0.ai_service ?? 's'] },
    ];
    for (const f of cases) {
      const shown = events.filter((e) => matches(e, f));
      expect(shown.length).toBeGreaterThan(0);
      for (const e of shown) expect(kept(f, JSON.stringify({ ...e, request_body: undefined, response_body: undefined }))).toBe(true);
      // And it lets through far fewer than all.
      expect(events.filter((e) => kept(f, JSON.stringify(e))).length).toBeLessThan(events.length);
    }
  });
});
