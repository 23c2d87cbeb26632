import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, type Attempt, type Destination, type EventItem, type ListQuery, type Page } from '../api.ts';
import { ErrorMessage, Loading, StatusBadge, Time, useNotify, useTopics } from '../components.tsx';

const HOUR = 3600_000;
/** The start of the chart's 24 hourly buckets: the hour before the current one, 23 hours back. */
const windowStart = () => new Date(Math.floor(Date.now() / HOUR) * HOUR - 23 * HOUR);

/**
 * Success, failure and cancels per hour over the last 24 hours: the tenant metrics API's hour counts
 * of this destination by status (kept by the attempts service as it stores attempts), so every
 * attempt of the window is counted however many there are.
 */
function ActivityChart({ destinationId }: { destinationId: string }) {
  const q = useQuery({
    queryKey: ['destination', destinationId, 'activity'],
    queryFn: async () => {
      // The window is taken at each fetch: a page left open past the hour moves with it, else the
      // new hour's attempts would fall outside its 24 buckets.
      const since = windowStart();
      return { since, counts: await api.attemptCounts(destinationId, since.toISOString()) };
    },
    refetchInterval: 30_000,
  });
  const data = useMemo(() => {
    const since = q.data?.since ?? windowStart();
    const buckets = Array.from({ length: 24 }, (_, i) => {
      const at = new Date(since.getTime() + i * HOUR);
      return {
        hour: at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
        success: 0,
        failed: 0,
        canceled: 0,
      };
    });
    for (const s of q.data?.counts.series ?? []) {
      const b = buckets[Math.floor((Date.parse(String(s.time)) - since.getTime()) / HOUR)];
      const status = s.status as 'success' | 'failed' | 'canceled';
      if (b && status in b) b[status] += Number(s.count ?? 0);
    }
    return buckets;
  }, [q.data]);
  const total = data.reduce((n, b) => n + b.success + b.failed + b.canceled, 0);
  const failed = data.reduce((n, b) => n + b.failed, 0);
  return (
    <figure className="card chart" aria-labelledby="activity-title">
      <figcaption id="activity-title">
        <strong>Activity, last 24 hours</strong>{' '}
        <span className="muted small">
          {total} attempts{total ? `, ${failed} failed` : ''}
        </span>
      </figcaption>
      <div className="chart-box" role="img" aria-label={`${total} delivery attempts in the last 24 hours, ${failed} failed`}>
        <ResponsiveContainer width="100%" height={180}>
          <BarChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -20 }}>
            <CartesianGrid vertical={false} stroke="var(--border)" />
            <XAxis
              dataKey="hour"
              tick={{ fill: 'var(--muted)', fontSize: 11 }}
              interval="preserveStartEnd"
              minTickGap={28}
              stroke="var(--border)"
            />
            <YAxis allowDecimals={false} tick={{ fill: 'var(--muted)', fontSize: 11 }} stroke="var(--border)" />
            <Tooltip
              contentStyle={{ background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' }}
              cursor={{ fill: 'var(--hover)' }}
            />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            <Bar dataKey="success" name="Succeeded" stackId="a" fill="var(--ok)" isAnimationActive={false} />
            <Bar dataKey="failed" name="Failed" stackId="a" fill="var(--bad)" isAnimationActive={false} />
            <Bar dataKey="canceled" name="Canceled" stackId="a" fill="var(--muted)" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
}

interface Filters {
  status: NonNullable<ListQuery['status']>;
  topic: string;
  from: string;
  to: string;
}

/** datetime-local (the browser's zone) to an ISO instant. */
const iso = (local: string) => (local ? new Date(local).toISOString() : undefined);

function useRetry(destinationId: string) {
  const client = useQueryClient();
  const notify = useNotify();
  return useMutation({
    mutationFn: (eventId: string) => api.retry(eventId, destinationId),
    onSuccess: () => {
      notify('Retry queued: a new attempt will appear shortly.');
      window.setTimeout(() => void client.invalidateQueries({ queryKey: ['destination', destinationId] }), 1500);
    },
  });
}

export function Deliveries({ destination }: { destination: Destination }) {
  const [view, setView] = useState<'attempts' | 'events'>('attempts');
  const [filters, setFilters] = useState<Filters>({ status: '', topic: '', from: '', to: '' });
  const [cursor, setCursor] = useState<{ next?: string; prev?: string }>({});
  const topics = useTopics();
  const client = useQueryClient();
  const show = (v: 'attempts' | 'events') => {
    setView(v);
    setCursor({});
  };
  const set = (patch: Partial<Filters>) => {
    setFilters((f) => ({ ...f, ...patch }));
    setCursor({});
  };
  const query = {
    status: filters.status,
    topic: filters.topic,
    'time[gte]': iso(filters.from),
    'time[lte]': iso(filters.to),
    limit: 20,
    ...cursor,
  };
  const listed = useQuery({
    queryKey: ['destination', destination.id, view, query],
    queryFn: (): Promise<Page<Attempt | EventItem>> =>
      view === 'attempts' ? api.attempts(destination.id, query) : api.events(destination.id, query),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const retry = useRetry(destination.id);
  // A disabled destination's deliveries cannot be retried (the page says so above).
  const disabled = Boolean(destination.disabled_at);
  const page = listed.data;
  const topicChoices = (topics.data ?? []).filter((t) => !t.includes('*'));
  // With a wildcard in TOPICS (or none set) events may have topics no list names: typed, the named
  // ones offered.
  const typedTopic = topicChoices.length === 0 || topicChoices.length < (topics.data ?? []).length;

  return (
    <div className="deliveries">
      <ActivityChart destinationId={destination.id} />
      <fieldset className="toolbar">
        <legend className="sr-only">Filters</legend>
        <div className="segmented">
          <button type="button" aria-pressed={view === 'attempts'} onClick={() => show('attempts')}>
            Attempts
          </button>
          <button type="button" aria-pressed={view === 'events'} onClick={() => show('events')}>
            Events
          </button>
        </div>
        <label htmlFor="f-status">
          Status
          <select id="f-status" value={filters.status} onChange={(e) => set({ status: e.target.value as Filters['status'] })}>
            <option value="">Any</option>
            <option value="success">Succeeded</option>
            <option value="failed">Failed</option>
            <option value="canceled">Canceled</option>
          </select>
        </label>
        <label htmlFor="f-topic">
          Topic
          {!typedTopic ? (
            <select id="f-topic" value={filters.topic} onChange={(e) => set({ topic: e.target.value })}>
              <option value="">Any</option>
              {topicChoices.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          ) : (
            <>
              <input
                id="f-topic"
                list="f-topics"
                value={filters.topic}
                placeholder="Any"
                onChange={(e) => set({ topic: e.target.value })}
              />
              <datalist id="f-topics">
                {topicChoices.map((t) => (
                  <option key={t} value={t} />
                ))}
              </datalist>
            </>
          )}
        </label>
        <label htmlFor="f-from">
          From
          <input id="f-from" type="datetime-local" value={filters.from} onChange={(e) => set({ from: e.target.value })} />
        </label>
        <label htmlFor="f-to">
          To
          <input id="f-to" type="datetime-local" value={filters.to} onChange={(e) => set({ to: e.target.value })} />
        </label>
        <button
          type="button"
          className="secondary"
          onClick={() => void client.invalidateQueries({ queryKey: ['destination', destination.id] })}
        >
          Refresh
        </button>
      </fieldset>
      <ErrorMessage error={listed.error ?? retry.error} />
      {listed.isPending ? <Loading what={view} /> : null}
      {page && page.models.length === 0 ? <p className="empty card">No {view} match.</p> : null}
      {page?.models.length ? (
        view === 'attempts' ? (
          <AttemptTable
            attempts={page.models as Attempt[]}
            destinationId={destination.id}
            onRetry={(e) => retry.mutate(e)}
            busy={retry.isPending || disabled}
          />
        ) : (
          <EventTable events={page.models as EventItem[]} onRetry={(e) => retry.mutate(e)} busy={retry.isPending || disabled} />
        )
      ) : null}
      <div className="pager">
        <button
          type="button"
          className="secondary"
          disabled={!page?.pagination.prev}
          onClick={() => setCursor({ prev: page?.pagination.prev ?? undefined })}
        >
          ← Newer
        </button>
        <button
          type="button"
          className="secondary"
          disabled={!page?.pagination.next}
          onClick={() => setCursor({ next: page?.pagination.next ?? undefined })}
        >
          Older →
        </button>
      </div>
    </div>
  );
}

function AttemptTable({
  attempts,
  destinationId,
  onRetry,
  busy,
}: {
  attempts: Attempt[];
  destinationId: string;
  onRetry: (eventId: string) => void;
  busy: boolean;
}) {
  return (
    <table className="table attempts">
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col">Response</th>
          <th scope="col">Topic</th>
          <th scope="col">Event</th>
          <th scope="col">Attempt</th>
          <th scope="col">Time</th>
          <th scope="col">
            <span className="sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {attempts.map((a) => (
          <tr key={a.id}>
            <td data-label="Status">
              <StatusBadge status={a.status} />
            </td>
            <td data-label="Response">
              <Link
                to={`/destinations/${encodeURIComponent(destinationId)}/attempts/${encodeURIComponent(a.id)}`}
                aria-label={`Attempt ${a.attempt_number} of event ${a.event_id}: ${a.code}`}
              >
                {a.code}
                {a.response_data && typeof a.response_data.reason === 'string' ? ` · ${a.response_data.reason}` : ''}
              </Link>
            </td>
            <td data-label="Topic">
              <code>{a.topic}</code>
            </td>
            <td data-label="Event" className="mono-cut">
              <code title={a.event_id}>{a.event_id}</code>
            </td>
            <td data-label="Attempt">
              #{a.attempt_number}
              {a.manual ? <span className="chip small">manual</span> : null}
            </td>
            <td data-label="Time">
              <Time iso={a.time} />
              {a.duration_ms !== null ? <span className="muted small"> · {a.duration_ms} ms</span> : null}
            </td>
            <td>
              <button type="button" className="secondary small" onClick={() => onRetry(a.event_id)} disabled={busy}>
                Retry
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function EventTable({ events, onRetry, busy }: { events: EventItem[]; onRetry: (eventId: string) => void; busy: boolean }) {
  return (
    <table className="table events">
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col">Topic</th>
          <th scope="col">Event</th>
          <th scope="col">Time</th>
          <th scope="col">Delivered</th>
          <th scope="col">
            <span className="sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <td data-label="Status">
              <StatusBadge status={e.status ?? (e.successful_at ? 'success' : 'pending')} />
              {e.status === 'scheduled' && e.deliver_at ? (
                <span className="help">
                  {' '}
                  due <Time iso={e.deliver_at} />
                </span>
              ) : null}
            </td>
            <td data-label="Topic">
              <code>{e.topic}</code>
            </td>
            <td data-label="Event" className="mono-cut">
              <code title={e.id}>{e.id}</code>
            </td>
            <td data-label="Time">
              <Time iso={e.time} />
            </td>
            <td data-label="Delivered">
              <Time iso={e.successful_at} />
            </td>
            <td>
              <button type="button" className="secondary small" onClick={() => onRetry(e.id)} disabled={busy}>
                Retry
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
