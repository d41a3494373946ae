/** Small shared pieces: loading, errors next to fields, tables, paging, dialogs, a JSON editor. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError, problemsFor, type Json, type Problem } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change; the last answer wins. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const run = useRef(0);
  useEffect(() => {
    const mine = ++run.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === run.current && setState({ data, loading: false }),
      (error: unknown) => mine === run.current && setState({ error, loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export const problemsOf = (e: unknown): Problem[] => (e instanceof ApiError ? e.problems : []);

/** The error of a failed call; problems that name a field are shown at that field instead. */
export function ErrorNote({ error, shown = [] }: { error: unknown; shown?: string[] }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  // '*': an editor of the whole body shows every problem beside itself.
  const rest = shown.includes('*') ? [] : problemsOf(error).filter((p) => !shown.some((f) => problemsFor([p], f).length));
  return (
    <div class="error" role="alert">
      <p>{message}</p>
      {rest.length > 0 && (
        <ul>
          {rest.map((p) => (
            <li key={p.path + p.message}>
              <code>{p.path || '(body)'}</code>: {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A labelled control with the server's problems for its field right below it. */
export function Field(props: {
  label: string;
  name: string;
  error?: unknown;
  hint?: string;
  children: (id: string, describedBy: string | undefined) => ComponentChildren;
}) {
  const id = `f-${props.name.replace(/[^a-zA-Z0-9_-]/g, '-')}`;
  const problems = problemsFor(problemsOf(props.error), props.name);
  const errId = problems.length ? `${id}-error` : undefined;
  return (
    <div class={problems.length ? 'field invalid' : 'field'}>
      <label for={id}>{props.label}</label>
      {props.children(id, errId)}
      {props.hint && <small>{props.hint}</small>}
      {errId && (
        <p class="field-error" id={errId} data-field={props.name}>
          {problems.map((p) => `${p.path}: ${p.message}`).join('; ')}
        </p>
      )}
    </div>
  );
}

export interface Column<T> {
  label: string;
  render: (row: T) => ComponentChildren;
  /** The API field the cell shows (`data-field`), so a test can compare it with the API's answer. */
  field?: string;
}

/**
 * A table in a horizontally scrolling box. While the first page loads it holds `placeholder` empty
 * rows of the final rows' height, so the rows arriving do not push what is below (layout shift).
 */
export function Table<T>({
  caption,
  columns,
  rows,
  rowKey,
  loading,
  placeholder = 5,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  loading?: boolean;
  placeholder?: number;
}) {
  const waiting = loading && rows.length === 0;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption} aria-busy={waiting ? 'true' : undefined}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.label}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {waiting &&
            Array.from({ length: placeholder }, (_, i) => (
              <tr key={`wait-${i}`} class="placeholder" aria-hidden="true">
                <td colSpan={columns.length}>&nbsp;</td>
              </tr>
            ))}
          {!waiting && rows.length === 0 && (
            <tr>
              <td colSpan={columns.length}>Nothing here yet.</td>
            </tr>
          )}
          {rows.map((r) => (
            <tr key={rowKey(r)} data-row={rowKey(r)}>
              {columns.map((c) => (
                <td key={c.label} data-field={c.field}>
                  {c.render(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Offset paging as the admin lists answer it (`current_page`, `page_size`, `total`). */
export function Pager({ page, size, total, count, onPage }: { page: number; size: number; total: number | null; count: number; onPage: (p: number) => void }) {
  const last = total === null ? null : Math.max(0, Math.ceil(total / size) - 1);
  const hasNext = last === null ? count === size : page < last;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page === 0} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page + 1}
        {last !== null && ` of ${last + 1}`}
        {total !== null && ` (${total} in all)`}
      </span>
      <button type="button" disabled={!hasNext} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}

/** A modal dialog (the native <dialog>, which keeps focus inside it). */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={onClose} onCancel={onClose}>
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}

/** Asks before a destructive action; shows the server's error if the action fails. */
export function Confirm({
  question,
  action,
  onDone,
  onCancel,
}: {
  question: string;
  action: () => Promise<unknown>;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const go = async () => {
    setBusy(true);
    try {
      await action();
      onDone();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Dialog title="Please confirm" onClose={onCancel}>
      <p>{question}</p>
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={go}>
          Confirm
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

export const pretty = (v: unknown): string => JSON.stringify(v, null, 2);

export function JsonView({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" tabIndex={0} aria-label={label}>
      {pretty(value)}
    </pre>
  );
}

/**
 * A JSON text area: a syntax error is shown at once; the server's problems (AB01, with paths
 * under `name`, or all of them for `*`, the whole body) are listed next to it by path.
 */
export function JsonEditor(props: {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  error?: unknown;
  rows?: number;
  shownElsewhere?: string[];
}) {
  let syntax: string | null = null;
  try {
    JSON.parse(props.value);
  } catch (e) {
    syntax = e instanceof Error ? e.message : 'not JSON';
  }
  const all = problemsOf(props.error);
  const elsewhere = props.shownElsewhere ?? [];
  const problems = (props.name === '*' ? all : problemsFor(all, props.name)).filter((p) => !elsewhere.some((f) => problemsFor([p], f).length));
  // Unique per editor: a page may hold two (an item's editor and a render preview).
  const id = `json-${useId()}`;
  return (
    <div class={problems.length || syntax ? 'field invalid' : 'field'}>
      <label for={id}>{props.label}</label>
      <div class="editor">
        <textarea
          id={id}
          spellcheck={false}
          rows={props.rows ?? 14}
          value={props.value}
          aria-describedby={`${id}-problems`}
          onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
        />
        <div id={`${id}-problems`} class="problems" aria-live="polite">
          {syntax && <p class="field-error">Not valid JSON: {syntax}</p>}
          {problems.map((p) => (
            <p class="field-error" data-field={p.path} key={p.path + p.message}>
              <code>{p.path}</code>: {p.message}
            </p>
          ))}
        </div>
      </div>
    </div>
  );
}

export function parseJson(text: string): Json | unknown[] | null {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return null;
  }
}

/** A form's submit: no reload, the last error cleared, the action's error kept for the fields. */
export function useSubmit(action: () => Promise<void>): { error: unknown; busy: boolean; submit: (e: Event) => Promise<void> } {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await action();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, submit };
}

/** A dialog form's buttons. */
export function FormActions({ label, onCancel }: { label: string; onCancel: () => void }) {
  return (
    <div class="actions">
      <button type="submit">{label}</button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}

/** A page's create button, shown only to a key with the scope. */
export function CreateButton({ shown, label, onClick }: { shown: boolean; label: string; onClick: () => void }) {
  return shown ? (
    <div class="toolbar">
      <button type="button" onClick={onClick}>
        {label}
      </button>
    </div>
  ) : null;
}

/** Cursor paging: the cursors of the pages before this one, so Previous needs no server state. */
export function CursorPager({ cursors, next, onChange }: { cursors: string[]; next: string | null | undefined; onChange: (cursors: string[]) => void }) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={!cursors.length} onClick={() => onChange(cursors.slice(0, -1))}>
        Previous
      </button>
      <button type="button" disabled={!next} onClick={() => next && onChange([...cursors, next])}>
        Next
      </button>
    </nav>
  );
}
