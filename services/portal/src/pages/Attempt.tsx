import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api } from '../api.ts';
import { ErrorMessage, formatTime, Loading, StatusBadge, useNotify, useTypeSchema } from '../components.tsx';

const pretty = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** One attempt: what was sent, what came back (or why nothing did), and when. */
export function AttemptPage() {
  const { id = '', attemptId = '' } = useParams();
  const client = useQueryClient();
  const notify = useNotify();
  const destination = useQuery({ queryKey: ['destination', id], queryFn: () => api.destination(id) });
  const schema = useTypeSchema(destination.data?.type);
  const q = useQuery({ queryKey: ['destination', id, 'attempt', attemptId], queryFn: () => api.attempt(id, attemptId) });
  const retry = useMutation({
    mutationFn: () => api.retry(q.data?.event_id ?? '', id),
    onSuccess: () => {
      notify('Retry queued: a new attempt will appear in the deliveries shortly.');
      void client.invalidateQueries({ queryKey: ['destination', id] });
    },
  });
  const back = `/destinations/${encodeURIComponent(id)}/deliveries`;
  if (q.isPending) return <Loading what="the attempt" />;
  if (q.error || !q.data) return <ErrorMessage error={q.error} />;
  const a = q.data;
  const r = a.response_data ?? {};
  // Failures name their reason; those that got an answer (an HTTP status) show it as a response.
  const failedWithoutResponse = typeof r.reason === 'string' && r.status === undefined && r.body === undefined;
  return (
    <section aria-labelledby="a-title">
      <p className="crumbs">
        <Link to="/">Destinations</Link> / <Link to={back}>{destination.data?.target ?? id}</Link> / Attempt
      </p>
      <div className="page-head">
        <h1 id="a-title">
          Attempt #{a.attempt_number} <StatusBadge status={a.status} />
        </h1>
        <div className="head-actions">
          <button
            type="button"
            className="primary"
            onClick={() => retry.mutate()}
            disabled={retry.isPending || Boolean(destination.data?.disabled_at)}
            title={destination.data?.disabled_at ? 'The destination is disabled: enable it to retry.' : undefined}
          >
            Retry
          </button>
        </div>
      </div>
      <ErrorMessage error={retry.error} />
      <dl className="details card">
        <dt>Code</dt>
        <dd>
          <code>{a.code}</code>
        </dd>
        <dt>Time</dt>
        <dd>{formatTime(a.time)}</dd>
        <dt>Duration</dt>
        <dd>{a.duration_ms === null ? '—' : `${a.duration_ms} ms`}</dd>
        <dt>Trigger</dt>
        <dd>{a.manual ? 'Manual retry' : a.attempt_number > 1 ? 'Automatic retry' : 'First delivery'}</dd>
        <dt>Topic</dt>
        <dd>
          <code>{a.topic}</code>
        </dd>
        <dt>Event</dt>
        <dd>
          <code>{a.event_id}</code>
        </dd>
      </dl>
      <div className="two-col">
        <section className="card section" aria-labelledby="req-title">
          <h2 id="req-title">Request</h2>
          <p>
            {destination.data?.type === 'webhook' ? <code>POST</code> : (schema?.label ?? '')}{' '}
            <code className="wrap">{destination.data?.target}</code>
          </p>
          {a.event?.metadata && Object.keys(a.event.metadata).length ? (
            <>
              <h3>Event metadata</h3>
              <pre className="code">{pretty(a.event.metadata)}</pre>
            </>
          ) : null}
          <h3>Body</h3>
          <pre className="code" data-testid="request-body">
            {a.event && 'data' in a.event ? pretty(a.event.data) : 'The event is no longer stored.'}
          </pre>
        </section>
        <section className="card section" aria-labelledby="res-title">
          <h2 id="res-title">{failedWithoutResponse ? 'Error' : 'Response'}</h2>
          {failedWithoutResponse ? (
            <>
              <p>
                <strong>{String(r.reason).replace(/_/g, ' ')}</strong>
              </p>
              {r.message ? <pre className="code">{String(r.message)}</pre> : null}
            </>
          ) : (
            <>
              <p>
                Status <code data-testid="response-status">{String(r.status ?? a.code)}</code>
                {r.truncated ? <span className="muted small"> (body truncated)</span> : null}
                {typeof r.reason === 'string' ? <span className="muted small"> ({r.reason.replace(/_/g, ' ')})</span> : null}
              </p>
              <h3>Body</h3>
              <pre className="code" data-testid="response-body">
                {r.body === undefined || r.body === '' ? '(empty)' : pretty(r.body)}
              </pre>
            </>
          )}
        </section>
      </div>
    </section>
  );
}
