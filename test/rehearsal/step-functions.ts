/**
 * A Step Functions interpreter for the subset of the Amazon States Language the synthesized state
 * machines use, with AWS's documented semantics (https://states-language.net/spec.html and
 * https://docs.aws.amazon.com/step-functions/latest/dg/concepts-input-output-filtering.html):
 *
 * - Task on `arn:aws:states:::lambda:invoke`: Parameters (`.$` fields as JSONPath on the input or
 *   `$$` on the context object), the result `{ExecutedVersion, Payload, StatusCode, ...}`;
 *   a function error is the error named by its `errorType` with the error body as its Cause, a
 *   function that died unhandled is `Lambda.Unknown`;
 * - InputPath, Parameters / ItemSelector, ResultSelector, ResultPath (null discards), OutputPath;
 * - Pass, Choice (string, numeric and boolean comparisons, IsPresent, And / Or / Not), Succeed, Fail;
 * - inline Map (ItemsPath, ItemSelector or Parameters, `$$.Map.Item.Value` / `Index`, MaxConcurrency,
 *   ItemProcessor or Iterator); one failed iteration fails the Map with its error;
 * - Retry (ErrorEquals, IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds; waits scaled
 *   down) and Catch (ErrorEquals, ResultPath, Next); `States.ALL` matches every error but
 *   `States.Runtime`, which nothing catches.
 * Anything else is refused with `States.Runtime` naming it, so a definition that grows past this
 * subset fails the rehearsal instead of being half run.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
type Obj = { [k: string]: JsonValue };

interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
}
interface Catcher {
  ErrorEquals: string[];
  ResultPath?: string | null;
  Next: string;
}
interface State {
  Type: string;
  Next?: string;
  End?: boolean;
  Resource?: string;
  InputPath?: string | null;
  Parameters?: JsonValue;
  ItemSelector?: JsonValue;
  ResultSelector?: JsonValue;
  ResultPath?: string | null;
  OutputPath?: string | null;
  Result?: JsonValue;
  Retry?: Retrier[];
  Catch?: Catcher[];
  Choices?: Obj[];
  Default?: string;
  ItemsPath?: string;
  MaxConcurrency?: number;
  ItemProcessor?: Machine;
  Iterator?: Machine;
  Error?: string;
  Cause?: string;
}
export interface Machine {
  StartAt: string;
  States: Record<string, State>;
}

/** A failed state: its error name and cause, as a Catch sees them. */
export class StatesError extends Error {
  readonly error: string;
  readonly causeText: string;
  constructor(error: string, cause: string) {
    super(`${error}: ${cause}`);
    this.error = error;
    this.causeText = cause;
  }
}

/** What one Lambda invocation answered: its payload, or its error (errorType, errorMessage), or that it died. */
export type LambdaAnswer = { payload: JsonValue } | { errorType: string; errorMessage: string } | { died: string };

export interface InterpreterOptions {
  /** Invokes the function the Task names (`FunctionName`, resolved) with its payload. */
  invoke(functionName: string, payload: JsonValue): Promise<LambdaAnswer>;
  /** A Retry's interval in ms is multiplied by this (default 0.001: seconds become milliseconds). */
  timeScale?: number;
}

/** What happened, in order: states entered, retries and catches (for assertions and failure messages). */
export interface ExecutionTrace {
  events: string[];
  status: 'SUCCEEDED' | 'FAILED';
  output?: JsonValue;
  error?: string;
  cause?: string;
}

const LAMBDA_INVOKE = /^arn:[^:]+:states:::lambda:invoke$/;

const isObj = (v: JsonValue | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSONPath subset the definitions use: `$`, `$.a.b`, `$.a[0]`, `$['a']`. */
function pathSegments(p: string): (string | number)[] {
  if (p !== '$' && !p.startsWith('$.') && !p.startsWith('$[')) throw new StatesError('States.Runtime', `unsupported path ${p}`);
  const out: (string | number)[] = [];
  const re = /\.([A-Za-z0-9_-]+)|\[(\d+)\]|\['([^']+)'\]/gy;
  re.lastIndex = 1;
  while (re.lastIndex < p.length) {
    const m = re.exec(p);
    if (!m) throw new StatesError('States.Runtime', `unsupported path ${p}`);
    out.push(m[2] !== undefined ? Number(m[2]) : (m[1] ?? m[3]!));
  }
  return out;
}

function read(value: JsonValue, p: string, context: JsonValue): JsonValue {
  const [root, rest] = p.startsWith('$$') ? [context, p.slice(1)] : [value, p];
  let at: JsonValue | undefined = root;
  for (const seg of pathSegments(rest)) {
    at = typeof seg === 'number' ? (Array.isArray(at) ? at[seg] : undefined) : isObj(at) ? at[seg] : undefined;
    if (at === undefined) throw new StatesError('States.Runtime', `the JSONPath ${p} could not be found in the input`);
  }
  return at;
}

const present = (value: JsonValue, p: string): boolean => {
  try {
    read(value, p, null);
    return true;
  } catch {
    return false;
  }
};

/** A Parameters / ItemSelector / ResultSelector template applied: `key.$` fields read their path. */
function applyTemplate(template: JsonValue, input: JsonValue, context: JsonValue): JsonValue {
  if (Array.isArray(template)) return template.map((t) => applyTemplate(t, input, context));
  if (!isObj(template)) return template;
  const out: Obj = {};
  for (const [k, v] of Object.entries(template)) {
    if (!k.endsWith('.$')) {
      out[k] = applyTemplate(v, input, context);
      continue;
    }
    const p = String(v);
    if (!p.startsWith('$')) throw new StatesError('States.Runtime', `intrinsic functions are not interpreted by the rehearsal: ${k}: ${p}`);
    out[k.slice(0, -2)] = read(input, p, context);
  }
  return out;
}

/** ResultPath: `null` keeps the input, `$` replaces it, `$.a.b` sets that field of a copy. */
function placeResult(input: JsonValue, resultPath: string | null | undefined, result: JsonValue): JsonValue {
  if (resultPath === null) return input;
  if (resultPath === undefined || resultPath === '$') return result;
  const segs = pathSegments(resultPath);
  const root = structuredClone(isObj(input) ? input : {}) as Obj;
  let at: Obj = root;
  for (const seg of segs.slice(0, -1)) {
    const next = at[String(seg)];
    at[String(seg)] = isObj(next) ? next : {};
    at = at[String(seg)] as Obj;
  }
  at[String(segs.at(-1))] = result;
  return root;
}

const selectPath = (value: JsonValue, p: string | null | undefined, context: JsonValue): JsonValue =>
  p === null ? {} : p === undefined ? value : read(value, p, context);

const matches = (errorEquals: string[], error: string) =>
  error !== 'States.Runtime' && errorEquals.some((e) => e === error || e === 'States.ALL' || (e === 'States.TaskFailed' && !error.startsWith('States.')));

const CHOICE_OPS: Record<string, (a: JsonValue, b: JsonValue) => boolean> = {
  StringEquals: (a, b) => typeof a === 'string' && a === b,
  NumericEquals: (a, b) => typeof a === 'number' && a === b,
  NumericLessThan: (a, b) => typeof a === 'number' && a < Number(b),
  NumericGreaterThan: (a, b) => typeof a === 'number' && a > Number(b),
  NumericGreaterThanEquals: (a, b) => typeof a === 'number' && a >= Number(b),
  NumericLessThanEquals: (a, b) => typeof a === 'number' && a <= Number(b),
  BooleanEquals: (a, b) => typeof a === 'boolean' && a === b,
};

function choose(rule: Obj, input: JsonValue): boolean {
  if (Array.isArray(rule.And)) return (rule.And as Obj[]).every((r) => choose(r, input));
  if (Array.isArray(rule.Or)) return (rule.Or as Obj[]).some((r) => choose(r, input));
  if (isObj(rule.Not)) return !choose(rule.Not, input);
  const variable = String(rule.Variable);
  if ('IsPresent' in rule) return present(input, variable) === rule.IsPresent;
  const op = Object.keys(rule).find((k) => k in CHOICE_OPS);
  if (!op) throw new StatesError('States.Runtime', `unsupported Choice rule ${JSON.stringify(rule)}`);
  // A Variable that is not present makes the rule fail with States.Runtime (AWS's behaviour).
  return CHOICE_OPS[op]!(read(input, variable, null), rule[op]!);
}

export class StateMachineInterpreter {
  readonly #opts: InterpreterOptions;
  readonly #events: string[] = [];

  constructor(opts: InterpreterOptions) {
    this.#opts = opts;
  }

  /** Runs an execution of `machine` on `input` to its end. */
  async run(machine: Machine, input: JsonValue, executionName = 'rehearsal'): Promise<ExecutionTrace> {
    const context: Obj = { Execution: { Name: executionName, Input: input }, StateMachine: {} };
    try {
      const output = await this.#runMachine(machine, input, context, '');
      return { events: this.#events, status: 'SUCCEEDED', output };
    } catch (e) {
      const err = e instanceof StatesError ? e : new StatesError('States.Runtime', String(e));
      this.#events.push(`ExecutionFailed ${err.error}`);
      return { events: this.#events, status: 'FAILED', error: err.error, cause: err.causeText };
    }
  }

  async #runMachine(machine: Machine, input: JsonValue, context: Obj, prefix: string): Promise<JsonValue> {
    let name: string | undefined = machine.StartAt;
    let value = input;
    while (name) {
      const state = machine.States[name];
      if (!state) throw new StatesError('States.Runtime', `no state ${name}`);
      this.#events.push(`${prefix}${name}`);
      const next = await this.#runState(name, state, value, context, prefix);
      value = next.output;
      if (next.end) return value;
      name = next.next;
    }
    return value;
  }

  async #runState(name: string, s: State, input: JsonValue, context: Obj, prefix: string): Promise<{ output: JsonValue; next?: string; end?: boolean }> {
    const after = (output: JsonValue) => ({ output, ...(s.End ? { end: true } : { next: s.Next }) });
    switch (s.Type) {
      case 'Succeed':
        return { output: selectPath(selectPath(input, s.InputPath, context), s.OutputPath, context), end: true };
      case 'Fail':
        throw new StatesError(s.Error ?? 'States.Fail', s.Cause ?? '');
      case 'Choice': {
        const chosen = (s.Choices ?? []).find((rule) => choose(rule, selectPath(input, s.InputPath, context)));
        const next = chosen ? String(chosen.Next) : s.Default;
        if (!next) throw new StatesError('States.NoChoiceMatched', `no Choice rule of ${name} matched`);
        return { output: selectPath(input, s.OutputPath, context), next };
      }
      case 'Pass': {
        const effective = this.#effectiveInput(s, input, context, s.Parameters);
        return after(selectPath(placeResult(input, s.ResultPath, s.Result ?? effective), s.OutputPath, context));
      }
      case 'Task':
      case 'Map':
        return this.#withRetryAndCatch(name, s, input, context, prefix);
      default:
        throw new StatesError('States.Runtime', `${name}: state type ${s.Type} is not interpreted by the rehearsal`);
    }
  }

  #effectiveInput(s: State, input: JsonValue, context: Obj, template: JsonValue | undefined): JsonValue {
    const selected = selectPath(input, s.InputPath, context);
    return template === undefined ? selected : applyTemplate(template, selected, context);
  }

  async #withRetryAndCatch(name: string, s: State, input: JsonValue, context: Obj, prefix: string) {
    const attempts = new Map<Retrier, number>();
    for (;;) {
      try {
        const raw = s.Type === 'Task' ? await this.#task(name, s, input, context) : await this.#map(name, s, input, context, prefix);
        const selected = s.ResultSelector === undefined ? raw : applyTemplate(s.ResultSelector, raw, context);
        const output = selectPath(placeResult(input, s.ResultPath, selected), s.OutputPath, context);
        return { output, ...(s.End ? { end: true } : { next: s.Next }) };
      } catch (e) {
        const err = e instanceof StatesError ? e : new StatesError('States.Runtime', String(e));
        const retrier = (s.Retry ?? []).find((r) => matches(r.ErrorEquals, err.error));
        const done = retrier ? (attempts.get(retrier) ?? 0) : 0;
        if (retrier && done < (retrier.MaxAttempts ?? 3)) {
          attempts.set(retrier, done + 1);
          const seconds = Math.min((retrier.IntervalSeconds ?? 1) * (retrier.BackoffRate ?? 2) ** done, retrier.MaxDelaySeconds ?? Number.POSITIVE_INFINITY);
          this.#events.push(`${prefix}${name} retried after ${err.error} (attempt ${done + 2}, ${seconds}s)`);
          await new Promise((r) => setTimeout(r, seconds * 1000 * (this.#opts.timeScale ?? 0.001)));
          continue;
        }
        const catcher = (s.Catch ?? []).find((c) => matches(c.ErrorEquals, err.error));
        if (!catcher) throw err;
        this.#events.push(`${prefix}${name} caught ${err.error} -> ${catcher.Next}`);
        return { output: placeResult(input, catcher.ResultPath, { Error: err.error, Cause: err.causeText }), next: catcher.Next };
      }
    }
  }

  async #task(name: string, s: State, input: JsonValue, context: Obj): Promise<JsonValue> {
    if (!s.Resource || !LAMBDA_INVOKE.test(s.Resource))
      throw new StatesError('States.Runtime', `${name}: resource ${s.Resource} is not interpreted by the rehearsal`);
    const params = this.#effectiveInput(s, input, context, s.Parameters);
    if (!isObj(params) || typeof params.FunctionName !== 'string') throw new StatesError('States.Runtime', `${name}: lambda:invoke needs a FunctionName`);
    const answer = await this.#opts.invoke(params.FunctionName, params.Payload ?? selectPath(input, s.InputPath, context));
    if ('died' in answer) throw new StatesError('Lambda.Unknown', answer.died);
    if ('errorType' in answer) {
      throw new StatesError(answer.errorType, JSON.stringify({ errorType: answer.errorType, errorMessage: answer.errorMessage }));
    }
    return {
      ExecutedVersion: '$LATEST',
      Payload: answer.payload,
      SdkHttpMetadata: { HttpStatusCode: 200 },
      SdkResponseMetadata: { RequestId: crypto.randomUUID() },
      StatusCode: 200,
    };
  }

  async #map(name: string, s: State, input: JsonValue, context: Obj, prefix: string): Promise<JsonValue> {
    const processor = s.ItemProcessor ?? s.Iterator;
    const mode = (processor as { ProcessorConfig?: { Mode?: string } } | undefined)?.ProcessorConfig?.Mode ?? 'INLINE';
    if (!processor || mode !== 'INLINE') throw new StatesError('States.Runtime', `${name}: only inline Maps are interpreted by the rehearsal`);
    const effective = selectPath(input, s.InputPath, context);
    const items = read(effective, s.ItemsPath ?? '$', context);
    if (!Array.isArray(items)) throw new StatesError('States.Runtime', `${name}: ItemsPath ${s.ItemsPath} is not an array`);
    const selector = s.ItemSelector ?? s.Parameters;
    const limit = s.MaxConcurrency && s.MaxConcurrency > 0 ? s.MaxConcurrency : items.length;
    const results: JsonValue[] = new Array(items.length);
    let nextIndex = 0;
    let peak = 0;
    let running = 0;
    let failed = false;
    const worker = async () => {
      // One failed iteration fails the Map: no further iteration starts.
      while (nextIndex < items.length && !failed) {
        const i = nextIndex++;
        const itemContext: Obj = { ...context, Map: { Item: { Index: i, Value: items[i]! } } };
        const itemInput = selector === undefined ? items[i]! : applyTemplate(selector, effective, itemContext);
        running++;
        peak = Math.max(peak, running);
        try {
          results[i] = await this.#runMachine(processor, itemInput, itemContext, `${prefix}${name}[${i}]/`);
        } catch (e) {
          failed = true;
          throw e;
        } finally {
          running--;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    this.#events.push(`${prefix}${name} ran ${items.length} iterations, at most ${peak} at once`);
    return results;
  }
}
