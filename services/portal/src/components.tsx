// Small shared pieces: type icons, safe Markdown, badges, field inputs, confirmation, notices.
import { useQuery } from '@tanstack/react-query';
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { createContext, type ReactNode, useCallback, useContext, useId, useMemo, useRef, useState } from 'react';
import { api, ApiError, type FieldDescriptor, type TypeSchema } from './api.ts';

// ---- data shared by several pages ----------------------------------------------------------

export function useTypes() {
  return useQuery({ queryKey: ['destination-types'], queryFn: api.destinationTypes, staleTime: Number.POSITIVE_INFINITY });
}

export function useTypeSchema(type: string | undefined): TypeSchema | undefined {
  return useTypes().data?.find((t) => t.type === type);
}

export function useTopics() {
  return useQuery({ queryKey: ['topics'], queryFn: api.topics, staleTime: Number.POSITIVE_INFINITY });
}

// ---- rendering ----------------------------------------------------------------------------

/** The type's SVG icon, sanitized (it comes from the API, never trusted as markup). */
export function TypeIcon({ schema, size = 24 }: { schema: TypeSchema | undefined; size?: number }) {
  const html = useMemo(() => (schema ? DOMPurify.sanitize(schema.icon, { USE_PROFILES: { svg: true } }) : ''), [schema]);
  return (
    <span
      className="type-icon"
      style={{ width: size, height: size }}
      aria-hidden="true"
      // biome-ignore lint/security/noDangerouslySetInnerHtml: sanitized by DOMPurify (SVG profile) above
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

/** Markdown from the API, rendered then sanitized; links open in a new tab without a referrer. */
export function Markdown({ source }: { source: string }) {
  const html = useMemo(() => {
    const raw = marked.parse(source, { async: false, gfm: true }) as string;
    const clean = DOMPurify.sanitize(raw, { USE_PROFILES: { html: true } });
    const doc = new DOMParser().parseFromString(clean, 'text/html');
    for (const a of doc.querySelectorAll('a')) {
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
    }
    return doc.body.innerHTML;
  }, [source]);
  // biome-ignore lint/security/noDangerouslySetInnerHtml: sanitized by DOMPurify above
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}

export function StatusBadge({ status }: { status: string }) {
  const kind = status === 'success' || status === 'enabled' ? 'ok' : status === 'failed' ? 'bad' : 'neutral';
  return <span className={`badge ${kind}`}>{status}</span>;
}

export function Topics({ topics }: { topics: string[] | '*' }) {
  const list = typeof topics === 'string' ? [topics] : topics;
  if (list.includes('*')) return <span className="chip">All topics</span>;
  return (
    <span className="chips">
      {list.map((t) => (
        <span key={t} className="chip">
          {t}
        </span>
      ))}
    </span>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function relativeTime(iso: string, now = Date.now()): string {
  const s = Math.round((now - Date.parse(iso)) / 1000);
  const abs = Math.abs(s);
  const [n, unit] =
    abs < 60
      ? [abs, 's']
      : abs < 3600
        ? [Math.round(abs / 60), 'min']
        : abs < 86400
          ? [Math.round(abs / 3600), 'h']
          : [Math.round(abs / 86400), 'd'];
  return s >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatTime(iso)}>
      {relativeTime(iso)}
    </time>
  );
}

export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div className="alert error" role="alert">
      <strong>{e ? e.message : 'Something went wrong. Try again.'}</strong>
      {e?.problems.length ? (
        <ul>
          {e.problems.map((p) => (
            <li key={`${p.path}:${p.message}`}>
              <code>{p.path.replace(/^body\./, '')}</code> {p.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

// ---- inputs -------------------------------------------------------------------------------

export type KeyValue = { key: string; value: string; id: number };

let rowIds = 0;
export const toRows = (m: Record<string, unknown> | null | undefined): KeyValue[] =>
  Object.entries(m ?? {}).map(([key, value]) => ({ key, value: String(value), id: ++rowIds }));
export const fromRows = (rows: KeyValue[]): Record<string, string> =>
  Object.fromEntries(rows.filter((r) => r.key.trim() !== '').map((r) => [r.key.trim(), r.value]));
/** A row with a value but no name would be left out of the save without a word: it is a problem. */
export const rowsProblem = (rows: KeyValue[] | undefined): string | null =>
  rows?.some((r) => r.key.trim() === '' && r.value !== '') ? 'Every entry with a value needs a name (or remove the entry).' : null;

/** For a JSON Merge Patch: the new map, with removed keys set to null. */
export function mapPatch(before: Record<string, unknown> | null | undefined, after: Record<string, string>): Record<string, string | null> {
  const patch: Record<string, string | null> = { ...after };
  for (const k of Object.keys(before ?? {})) if (!(k in after)) patch[k] = null;
  return patch;
}

export function KeyValueEditor({
  label,
  rows,
  onChange,
  keyLabel = 'Name',
  valueLabel = 'Value',
  hideLegend,
  error,
}: {
  label: string;
  rows: KeyValue[];
  onChange: (rows: KeyValue[]) => void;
  keyLabel?: string;
  valueLabel?: string;
  hideLegend?: boolean;
  error?: string | null;
}) {
  const set = (id: number, patch: Partial<KeyValue>) => onChange(rows.map((r) => (r.id === id ? { ...r, ...patch } : r)));
  return (
    <fieldset className="kv">
      <legend className={hideLegend ? 'sr-only' : undefined}>{label}</legend>
      {rows.length === 0 ? <p className="muted small">None.</p> : null}
      {rows.map((r, i) => (
        <div className="kv-row" key={r.id}>
          <input
            aria-label={`${label} ${keyLabel.toLowerCase()} ${i + 1}`}
            placeholder={keyLabel}
            value={r.key}
            onChange={(e) => set(r.id, { key: e.target.value })}
          />
          <input
            aria-label={`${label} ${valueLabel.toLowerCase()} ${i + 1}`}
            placeholder={valueLabel}
            value={r.value}
            onChange={(e) => set(r.id, { value: e.target.value })}
          />
          <button
            type="button"
            className="ghost"
            aria-label={`Remove ${label.toLowerCase()} ${i + 1}`}
            onClick={() => onChange(rows.filter((x) => x.id !== r.id))}
          >
            ✕
          </button>
        </div>
      ))}
      {error ? (
        <p className="field-error" role="alert">
          {error}
        </p>
      ) : null}
      <button type="button" className="secondary small" onClick={() => onChange([...rows, { key: '', value: '', id: ++rowIds }])}>
        Add {label.toLowerCase().replace(/s$/, '')}
      </button>
    </fieldset>
  );
}

/** A client-side check of a field, as the API checks it (the API's answer still decides). */
export function fieldProblem(f: FieldDescriptor, v: unknown): string | null {
  if (v === undefined || v === null || v === '') return f.required ? 'is required' : null;
  if (typeof v !== 'string') return null;
  if (f.minlength !== undefined && v.length < f.minlength) return `must be at least ${f.minlength} characters`;
  if (f.maxlength !== undefined && v.length > f.maxlength) return `must be at most ${f.maxlength} characters`;
  if (f.pattern) {
    try {
      if (!new RegExp(`^(?:${f.pattern})$`).test(v)) return 'is not in the expected format';
    } catch {
      return null;
    }
  }
  return null;
}

/** One field of a type schema as a form control; sensitive values are masked until shown. */
export function FieldInput({
  field,
  value,
  onChange,
  error,
  placeholder,
}: {
  field: FieldDescriptor;
  value: unknown;
  onChange: (v: unknown) => void;
  error?: string | null;
  placeholder?: string;
}) {
  const id = useId();
  const [shown, setShown] = useState(false);
  const describedBy = `${id}-desc${error ? ` ${id}-err` : ''}`;
  if (field.type === 'key_value_map') {
    return (
      <div className="field">
        <KeyValueEditor label={field.label} rows={(value as KeyValue[] | undefined) ?? []} onChange={onChange} error={error} />
        {field.description ? <p className="help">{field.description}</p> : null}
      </div>
    );
  }
  if (field.type === 'checkbox') {
    return (
      <div className="field checkbox">
        <label>
          <input
            type="checkbox"
            checked={value === true || value === 'true'}
            onChange={(e) => onChange(e.target.checked)}
            aria-describedby={describedBy}
          />
          {field.label}
        </label>
        <p className="help" id={`${id}-desc`}>
          {field.description}
        </p>
      </div>
    );
  }
  return (
    <div className={`field${error ? ' invalid' : ''}`}>
      <label htmlFor={id}>
        {field.label}
        {field.required ? (
          <span className="req" aria-hidden="true">
            {' '}
            *
          </span>
        ) : null}
      </label>
      <div className="input-row">
        {field.type === 'select' ? (
          <select
            id={id}
            value={String(value ?? '')}
            onChange={(e) => onChange(e.target.value)}
            required={field.required}
            aria-describedby={describedBy}
          >
            <option value="">Choose…</option>
            {field.options?.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        ) : (
          <input
            id={id}
            name={field.key}
            type={field.sensitive && !shown ? 'password' : 'text'}
            autoComplete="off"
            spellCheck={false}
            value={String(value ?? '')}
            placeholder={placeholder ?? field.default ?? ''}
            onChange={(e) => onChange(e.target.value)}
            required={field.required}
            maxLength={field.maxlength}
            aria-invalid={error ? true : undefined}
            aria-describedby={describedBy}
          />
        )}
        {field.sensitive ? (
          <button
            type="button"
            className="secondary small"
            onClick={() => setShown((s) => !s)}
            aria-pressed={shown}
            aria-label={`${shown ? 'Hide' : 'Show'} ${field.label}`}
          >
            {shown ? 'Hide' : 'Show'}
          </button>
        ) : null}
      </div>
      <p className="help" id={`${id}-desc`}>
        {field.description}
      </p>
      {error ? (
        <p className="field-error" id={`${id}-err`}>
          {field.label} {error}
        </p>
      ) : null}
    </div>
  );
}

/** Topic picker: all topics, or some of the configured ones (free text when any topic is allowed). */
export function TopicPicker({ value, onChange, hideLegend }: { value: string[]; onChange: (v: string[]) => void; hideLegend?: boolean }) {
  const topics = useTopics();
  const all = value.includes('*');
  const configured = (topics.data ?? []).filter((t) => !t.includes('*'));
  const free = (topics.data ?? []).some((t) => t.includes('*'));
  // The box holds the topics no checkbox shows, read from the value once the topics are known (not
  // before: then every topic would count as typed), and as typed while it is edited.
  const [typing, setTyping] = useState<string | null>(null);
  const text = typing ?? (topics.data ? value.filter((t) => t !== '*' && !configured.includes(t)).join(', ') : '');
  const chosen = value.filter((t) => t !== '*');
  const toggle = (t: string, on: boolean) => onChange(on ? [...chosen, t] : chosen.filter((x) => x !== t));
  return (
    <fieldset className="topics">
      <legend className={hideLegend ? 'sr-only' : undefined}>Topics</legend>
      <label className="check">
        <input type="checkbox" checked={all} onChange={(e) => onChange(e.target.checked ? ['*'] : [])} />
        All topics, including ones added later
      </label>
      {!all && configured.length ? (
        <div className="topic-grid">
          {configured.map((t) => (
            <label key={t} className="check">
              <input type="checkbox" checked={chosen.includes(t)} onChange={(e) => toggle(t, e.target.checked)} />
              <code>{t}</code>
            </label>
          ))}
        </div>
      ) : null}
      {!all && free ? (
        <div className="field">
          <label htmlFor="topics-text">Topics (comma separated)</label>
          <input
            id="topics-text"
            value={text}
            placeholder="user.created, order.paid"
            onChange={(e) => {
              setTyping(e.target.value);
              const typed = e.target.value
                .split(',')
                .map((x) => x.trim())
                .filter(Boolean);
              onChange([...chosen.filter((t) => configured.includes(t)), ...typed]);
            }}
          />
          <p className="help">Allowed: {(topics.data ?? []).join(', ')}</p>
        </div>
      ) : null}
    </fieldset>
  );
}

// ---- confirmation and notices -------------------------------------------------------------

/** A button that asks first, in a modal dialog (focus is kept inside; Escape cancels). */
export function ConfirmButton({
  label,
  title,
  body,
  confirmLabel,
  onConfirm,
  danger,
  disabled,
}: {
  label: string;
  title: string;
  body: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  return (
    <>
      <button type="button" className={danger ? 'danger' : 'secondary'} onClick={() => ref.current?.showModal()} disabled={disabled}>
        {label}
      </button>
      <dialog ref={ref} aria-labelledby={titleId} className="dialog">
        <h2 id={titleId}>{title}</h2>
        <div>{body}</div>
        <div className="actions">
          <button type="button" className="secondary" onClick={() => ref.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? 'danger' : 'primary'}
            onClick={() => {
              ref.current?.close();
              onConfirm();
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

const NoticeContext = createContext<(text: string) => void>(() => undefined);

export function NoticeProvider({ children }: { children: ReactNode }) {
  const [text, setText] = useState('');
  const timer = useRef<number | undefined>(undefined);
  const notify = useCallback((t: string) => {
    setText(t);
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(() => setText(''), 6000);
  }, []);
  return (
    <NoticeContext.Provider value={notify}>
      {children}
      <div className={`notice${text ? ' shown' : ''}`} role="status" aria-live="polite">
        {text}
      </div>
    </NoticeContext.Provider>
  );
}

export const useNotify = () => useContext(NoticeContext);
