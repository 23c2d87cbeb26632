import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, lazy, type ReactNode, Suspense, useEffect, useRef, useState } from 'react';
import { Link, NavLink, useNavigate, useParams } from 'react-router';
import { api, type Destination, type FieldDescriptor, type TypeSchema } from '../api.ts';
import {
  ConfirmButton,
  ErrorMessage,
  FieldInput,
  formatTime,
  KeyValueEditor,
  Loading,
  mapPatch,
  fromRows,
  relativeTime,
  rowsProblem,
  StatusBadge,
  TopicPicker,
  Topics,
  toRows,
  TypeIcon,
  useNotify,
  useTypes,
} from '../components.tsx';
import { editableCredentials, fieldProblems, patchObject, problemsOf, toValues, without } from '../forms.ts';
import { OrderedForm, RateLimitForm } from './Controls.tsx';

// The deliveries view carries the chart library: loaded when first shown, not with the app.
const Deliveries = lazy(() => import('./Deliveries.tsx').then((m) => ({ default: m.Deliveries })));

export function DestinationPage({ tab }: { tab: 'settings' | 'deliveries' }) {
  const { id = '' } = useParams();
  const q = useQuery({ queryKey: ['destination', id], queryFn: () => api.destination(id) });
  const types = useTypes();
  const schema = types.data?.find((t) => t.type === q.data?.type);
  // Why a destination is disabled (by hand, or after failing in a row): asked only while it is.
  const health = useQuery({
    queryKey: ['destination', id, 'health', q.data?.disabled_at],
    queryFn: () => api.destinationHealth(id),
    enabled: Boolean(q.data?.disabled_at),
  });
  const navigate = useNavigate();
  const notify = useNotify();
  const client = useQueryClient();
  const refresh = (d: Destination) => {
    client.setQueryData(['destination', id], d);
    void client.invalidateQueries({ queryKey: ['destinations'] });
  };
  const toggle = useMutation({
    mutationFn: (enable: boolean) => api.setEnabled(id, enable),
    onSuccess: (d) => {
      refresh(d);
      notify(d.disabled_at ? 'Destination disabled: no events are delivered to it.' : 'Destination enabled.');
    },
  });
  // A deleted destination's queries are dropped once its page is gone: dropped while the page still
  // shows, they would be fetched again at its next render (the destination and its attempts: 404s).
  const deleted = useRef(false);
  useEffect(
    () => () => {
      if (deleted.current) client.removeQueries({ queryKey: ['destination', id] });
    },
    [client, id],
  );
  const remove = useMutation({
    mutationFn: () => api.deleteDestination(id),
    onSuccess: () => {
      deleted.current = true;
      // Out of the cached list at once: the list shown next would otherwise ask for its last attempt.
      client.setQueryData<Destination[]>(['destinations'], (list) => list?.filter((x) => x.id !== id));
      void client.invalidateQueries({ queryKey: ['destinations'] });
      notify('Destination deleted.');
      navigate('/');
    },
  });

  if (q.isPending) return <Loading what="the destination" />;
  if (q.error || !q.data)
    return (
      <section>
        <p className="crumbs">
          <Link to="/">Destinations</Link>
        </p>
        <ErrorMessage error={q.error} />
      </section>
    );
  const d = q.data;
  const enabled = !d.disabled_at;
  return (
    <section aria-labelledby="d-title">
      <p className="crumbs">
        <Link to="/">Destinations</Link> / {schema?.label ?? d.type}
      </p>
      <div className="page-head">
        <h1 id="d-title" className="with-icon">
          <TypeIcon schema={schema} size={28} />
          <span className="target">{d.target || d.id}</span>
        </h1>
        <div className="head-actions">
          <StatusBadge status={enabled ? 'enabled' : 'disabled'} />
          <button type="button" className="secondary" onClick={() => toggle.mutate(!enabled)} disabled={toggle.isPending}>
            {enabled ? 'Disable' : 'Enable'}
          </button>
          <ConfirmButton
            label="Delete"
            danger
            title="Delete this destination?"
            body={
              <p>
                Events will no longer be delivered to <strong>{d.target || d.id}</strong>. Its delivery history is kept but can no longer be
                retried. This cannot be undone.
              </p>
            }
            confirmLabel="Delete destination"
            onConfirm={() => remove.mutate()}
          />
        </div>
      </div>
      {enabled ? null : <DisabledNote health={health.data} />}
      <ErrorMessage error={toggle.error ?? remove.error} />
      <nav className="tabs" aria-label="Destination">
        <NavLink to={`/destinations/${encodeURIComponent(id)}`} end>
          Settings
        </NavLink>
        <NavLink to={`/destinations/${encodeURIComponent(id)}/deliveries`}>Deliveries</NavLink>
      </nav>
      {tab === 'deliveries' ? (
        <Suspense fallback={<Loading what="deliveries" />}>
          <Deliveries destination={d} />
        </Suspense>
      ) : schema ? (
        <Settings destination={d} schema={schema} onSaved={refresh} />
      ) : types.error ? (
        <>
          <ErrorMessage error={types.error} />
          <button type="button" className="secondary" onClick={() => void types.refetch()}>
            Try again
          </button>
        </>
      ) : (
        <Loading what="the destination type" />
      )}
    </section>
  );
}

/** Why the destination gets no deliveries, and what to do about it. */
function DisabledNote({ health }: { health: Awaited<ReturnType<typeof api.destinationHealth>> | undefined }) {
  const why =
    health?.disabled_reason === 'consecutive_failures'
      ? `It was disabled after ${health.consecutive_failures} failed deliveries in a row${health.last_failure_code ? ` (the last: ${health.last_failure_code})` : ''}.`
      : health?.disabled_reason === 'manual'
        ? 'It was disabled by hand.'
        : '';
  return (
    <p className="alert info" role="status" data-testid="disabled-note">
      This destination is disabled: no events are delivered to it, and its deliveries cannot be retried. {why} Enable it to deliver again.
    </p>
  );
}

function Section({ title, children, id }: { title: string; children: ReactNode; id: string }) {
  return (
    <section className="card section" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** One form saving one part of the destination with a PATCH. */
function useSave(d: Destination, onSaved: (d: Destination) => void, message: string) {
  const notify = useNotify();
  return useMutation({
    mutationFn: (body: Record<string, unknown>) => api.updateDestination(d.id, body),
    onSuccess: (next) => {
      onSaved(next);
      notify(message);
    },
  });
}

function Settings({
  destination: d,
  schema,
  onSaved,
}: {
  destination: Destination;
  schema: TypeSchema;
  onSaved: (d: Destination) => void;
}) {
  return (
    <div className="settings">
      <TopicsForm d={d} onSaved={onSaved} />
      <FieldsForm d={d} member="config" fields={schema.config_fields} title="Configuration" onSaved={onSaved} />
      {d.type === 'webhook' ? (
        <SecretPanel d={d} onSaved={onSaved} />
      ) : (
        <FieldsForm
          d={d}
          member="credentials"
          fields={editableCredentials(schema)}
          title="Credentials"
          help="Stored encrypted. Secret values are shown masked; type a new value to replace one."
          onSaved={onSaved}
        />
      )}
      <FilterForm d={d} onSaved={onSaved} />
      <MetadataForm d={d} onSaved={onSaved} />
      <RateLimitForm d={d} onSaved={onSaved} />
      <OrderedForm d={d} onSaved={onSaved} />
      <Section title="Details" id="s-details">
        <dl className="details">
          <dt>ID</dt>
          <dd>
            <code>{d.id}</code>
          </dd>
          <dt>Type</dt>
          <dd>{schema.label}</dd>
          <dt>Topics</dt>
          <dd>
            <Topics topics={d.topics} />
          </dd>
          <dt>Created</dt>
          <dd>{formatTime(d.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{formatTime(d.updated_at)}</dd>
          {d.disabled_at ? (
            <>
              <dt>Disabled</dt>
              <dd>{formatTime(d.disabled_at)}</dd>
            </>
          ) : null}
        </dl>
      </Section>
    </div>
  );
}

function TopicsForm({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [topics, setTopics] = useState<string[]>(typeof d.topics === 'string' ? [d.topics] : d.topics);
  const save = useSave(d, onSaved, 'Topics saved.');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (topics.length) save.mutate({ topics: topics.includes('*') ? '*' : topics });
  };
  return (
    <Section title="Topics" id="s-topics">
      <form onSubmit={submit}>
        <TopicPicker value={topics} onChange={setTopics} hideLegend />
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending || topics.length === 0}>
            Save topics
          </button>
        </div>
      </form>
    </Section>
  );
}

/**
 * A destination's config or credentials as a form of its type's fields. Only what changed is sent
 * (credentials come back masked: a value left as shown is kept), checked here first; the API's
 * refusals are shown at their fields.
 */
function FieldsForm({
  d,
  member,
  fields,
  title,
  help,
  onSaved,
}: {
  d: Destination;
  member: 'config' | 'credentials';
  fields: FieldDescriptor[];
  title: string;
  help?: string;
  onSaved: (d: Destination) => void;
}) {
  const stored = d[member];
  const [values, setValues] = useState(() => toValues(fields, stored));
  const [problems, setProblems] = useState<Record<string, string>>({});
  const save = useSave(d, onSaved, `${title} saved.`);
  if (!fields.length) return null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const patch = patchObject(fields, stored, values);
    // A value left as stored is not checked (a masked secret need not match its pattern); entries
    // always are (one without a name changes nothing in the patch, and is refused).
    const found = problemsOf(
      fields.filter((f) => f.key in patch || f.type === 'key_value_map'),
      values,
    );
    setProblems(found);
    if (Object.keys(found).length) return;
    save.mutate({ [member]: patch }, { onError: (err) => setProblems(fieldProblems(err, { [member]: '' })) });
  };
  return (
    <Section title={title} id={member === 'config' ? 's-config' : 's-creds'}>
      {help && <p className="help">{help}</p>}
      <form onSubmit={submit} noValidate>
        {fields.map((f) => (
          <FieldInput
            key={f.key}
            field={f}
            value={values[f.key]}
            error={problems[f.key]}
            onChange={(v) => {
              setValues((x) => ({ ...x, [f.key]: v }));
              setProblems((p) => without(p, f.key));
            }}
          />
        ))}
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save {title.toLowerCase()}
          </button>
        </div>
      </form>
    </Section>
  );
}

/** The webhook signing secret, its rotation, and the window during which both secrets sign. */
function SecretPanel({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [shown, setShown] = useState(false);
  const notify = useNotify();
  const rotate = useSave(d, onSaved, 'Secret rotated. Deliveries are signed with both secrets until the previous one expires.');
  const secret = String(d.credentials.secret ?? '');
  const previousUntil = d.credentials.previous_secret_invalid_at ? String(d.credentials.previous_secret_invalid_at) : null;
  // Said copied only once it is: over plain http (not localhost) a browser has no clipboard API.
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      notify('Secret copied.');
    } catch {
      notify('This browser did not allow copying here: reveal the secret and copy it by hand.');
    }
  };
  return (
    <Section title="Signing secret" id="s-secret">
      <p className="help">Every delivery is signed with this secret so that your endpoint can check that it comes from us.</p>
      <div className="secret-row">
        <code className="secret" data-testid="secret">
          {shown ? secret : `${secret.slice(0, 10)}${'•'.repeat(20)}`}
        </code>
        <button type="button" className="secondary small" onClick={() => setShown((s) => !s)} aria-pressed={shown}>
          {shown ? 'Hide' : 'Reveal'}
        </button>
        <button type="button" className="secondary small" onClick={copy}>
          Copy
        </button>
      </div>
      {previousUntil && Date.parse(previousUntil) > Date.now() ? (
        <div className="alert info" data-testid="double-signing">
          <strong>Double signing until {formatTime(previousUntil)}</strong> ({relativeTime(previousUntil)}). Until then each delivery
          carries signatures with both the new and the previous secret, so your endpoint can switch to the new secret without missing
          events.
        </div>
      ) : null}
      <ErrorMessage error={rotate.error} />
      <div className="actions">
        <ConfirmButton
          label="Rotate secret"
          title="Rotate the signing secret?"
          body={
            <p>
              A new secret is generated. For the next 24 hours deliveries are signed with both the new and the current secret; after that,
              only with the new one. Update your endpoint within that window.
            </p>
          }
          confirmLabel="Rotate secret"
          onConfirm={() => rotate.mutate({ credentials: { rotate_secret: true } })}
        />
      </div>
    </Section>
  );
}

const FILTER_EXAMPLE = `{
  "data": { "amount": { "$gte": 100 } },
  "topic": { "$startsWith": "order." }
}`;

function FilterForm({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [text, setText] = useState(() => (d.filter ? JSON.stringify(d.filter, null, 2) : ''));
  const [problem, setProblem] = useState<string | null>(null);
  const save = useSave(d, onSaved, 'Filter saved.');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!text.trim()) {
      setProblem(null);
      save.mutate({ filter: null });
      return;
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      setProblem(null);
      save.mutate({ filter: parsed });
    } catch {
      setProblem('The filter must be a JSON object.');
    }
  };
  return (
    <Section title="Filter" id="s-filter">
      <form onSubmit={submit} noValidate>
        <div className="filter-grid">
          <div className="field">
            <label htmlFor="filter-json">Filter (JSON)</label>
            <textarea
              id="filter-json"
              rows={8}
              spellCheck={false}
              value={text}
              placeholder={FILTER_EXAMPLE}
              onChange={(e) => setText(e.target.value)}
            />
            {problem ? <p className="field-error">{problem}</p> : null}
          </div>
          <details className="guide" open>
            <summary>How filters work</summary>
            <p>
              Only events that match are delivered. A filter is matched against the event's <code>id</code>, <code>topic</code>,{' '}
              <code>time</code>, <code>metadata</code> and <code>data</code>:
            </p>
            <ul>
              <li>keys are combined with AND; nested objects match nested fields;</li>
              <li>a plain value must be equal (or contained, for an array);</li>
              <li>
                operators: <code>$eq $neq $gt $gte $lt $lte $in $nin $startsWith $endsWith $exist $or $and $not</code>.
              </li>
            </ul>
            <p>Leave it empty to deliver every event of the destination's topics.</p>
          </details>
        </div>
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save filter
          </button>
        </div>
      </form>
    </Section>
  );
}

function MetadataForm({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [rows, setRows] = useState(() => toRows(d.delivery_metadata));
  const [problem, setProblem] = useState<string | null>(null);
  const save = useSave(d, onSaved, 'Delivery metadata saved.');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setProblem(rowsProblem(rows));
    if (rowsProblem(rows)) return;
    save.mutate({ delivery_metadata: mapPatch(d.delivery_metadata, fromRows(rows)) });
  };
  return (
    <Section title="Delivery metadata" id="s-meta">
      <p className="help">
        Sent with every delivery{d.type === 'webhook' ? ' as HTTP headers (with the metadata prefix)' : ''}, alongside each event's own
        metadata (which wins on conflict). Stored encrypted.
      </p>
      <form onSubmit={submit}>
        <KeyValueEditor label="Metadata" rows={rows} onChange={setRows} hideLegend error={problem} />
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save metadata
          </button>
        </div>
      </form>
    </Section>
  );
}
