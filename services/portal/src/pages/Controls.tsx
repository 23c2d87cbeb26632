// The destination's delivery controls (docs/api.md, "Delivery controls"), on its settings page:
// each saved with a PATCH of its own member, as the other settings forms are.
import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, type Destination } from '../api.ts';
import { ErrorMessage, useNotify } from '../components.tsx';

type RateLimit = NonNullable<Destination['rate_limit']>;

const asText = (n: number | undefined) => (n === undefined ? '' : String(n));

export function RateLimitForm({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [perSecond, setPerSecond] = useState(asText(d.rate_limit?.per_second));
  const [perMinute, setPerMinute] = useState(asText(d.rate_limit?.per_minute));
  const [problem, setProblem] = useState<string | null>(null);
  const notify = useNotify();
  const save = useMutation({
    mutationFn: (rate_limit: RateLimit | null) => api.updateDestination(d.id, { rate_limit }),
    onSuccess: (next) => {
      onSaved(next);
      notify(next.rate_limit ? 'Rate limit saved.' : 'Rate limit removed.');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const limit: RateLimit = {};
    for (const [key, text] of [
      ['per_second', perSecond],
      ['per_minute', perMinute],
    ] as const) {
      if (text.trim() === '') continue;
      const n = Number(text);
      if (!Number.isInteger(n) || n < 1) {
        setProblem('Enter whole numbers of at least 1, or leave a box empty.');
        return;
      }
      limit[key] = n;
    }
    setProblem(null);
    save.mutate(Object.keys(limit).length ? limit : null);
  };
  return (
    <section className="card section" aria-labelledby="s-rate">
      <h2 id="s-rate">Rate limit</h2>
      <p className="help">
        The most deliveries this destination gets per second and per minute; leave both empty for no limit. Deliveries over the limit wait
        their turn (no attempt is counted) without slowing your other destinations.
      </p>
      <form onSubmit={submit} noValidate>
        <div className={`field${problem ? ' invalid' : ''}`}>
          <label htmlFor="rate-per-second">Deliveries per second</label>
          <input id="rate-per-second" inputMode="numeric" value={perSecond} onChange={(e) => setPerSecond(e.target.value)} />
        </div>
        <div className={`field${problem ? ' invalid' : ''}`}>
          <label htmlFor="rate-per-minute">Deliveries per minute</label>
          <input id="rate-per-minute" inputMode="numeric" value={perMinute} onChange={(e) => setPerMinute(e.target.value)} />
        </div>
        {problem ? (
          <p className="alert error" role="alert">
            {problem}
          </p>
        ) : null}
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save rate limit
          </button>
        </div>
      </form>
    </section>
  );
}

/** `ordered`: one delivery at a time in publish order; while one is retried, what blocks it and how many wait. */
export function OrderedForm({ d, onSaved }: { d: Destination; onSaved: (d: Destination) => void }) {
  const [ordered, setOrdered] = useState(d.ordered === true);
  const notify = useNotify();
  const save = useMutation({
    mutationFn: (next: boolean) => api.updateDestination(d.id, { ordered: next }),
    onSuccess: (next) => {
      onSaved(next);
      notify(next.ordered ? 'Ordered delivery on.' : 'Ordered delivery off.');
    },
  });
  // Refreshed while it is shown: a block comes and goes with the destination's retries.
  const order = useQuery({
    queryKey: ['destination-order', d.id],
    queryFn: () => api.destinationOrder(d.id),
    enabled: d.ordered === true,
    refetchInterval: 5000,
  });
  const blocked = order.data?.blocked;
  const waiting = order.data?.waiting ?? 0;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(ordered);
  };
  return (
    <section className="card section" aria-labelledby="s-ordered">
      <h2 id="s-ordered">Delivery order</h2>
      <form onSubmit={submit} noValidate>
        <div className="field checkbox">
          <label>
            <input type="checkbox" checked={ordered} onChange={(e) => setOrdered(e.target.checked)} aria-describedby="ordered-desc" />
            Deliver in publish order
          </label>
          <p className="help" id="ordered-desc">
            One delivery at a time, in the order the events were published. While one fails and waits for its retry, the later ones wait
            behind it; once it succeeds or is given up, the next goes. A manual retry waits its turn in that queue, out of the event's
            original order.
          </p>
        </div>
        <ErrorMessage error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            Save delivery order
          </button>
        </div>
      </form>
      {d.ordered ? (
        <p className="help" role="status">
          {blocked
            ? `Blocked by event ${blocked.event_id} (attempt ${blocked.attempt_number} failed; next try ${new Date(blocked.next_attempt_at).toLocaleString()}); ${blocked.waiting} waiting behind it.`
            : waiting
              ? `Nothing is blocking this destination; ${waiting} waiting in its queue, being delivered in order.`
              : 'Nothing is blocking this destination.'}
        </p>
      ) : null}
    </section>
  );
}
